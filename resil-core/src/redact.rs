//! Secrets out of what resil prints: the one function that takes the
//! password out of every URL in a text.
//!
//! A `cluster-url` may carry credentials (`redis://admin:secret@host:6379/0`).
//! Everything resil prints, logs or serves that may hold one — start-up and
//! reload errors, the configuration report and `resil explain`, the
//! actuator's answers and audit log, the backend's own messages — goes
//! through [`userinfo`] first.

use std::borrow::Cow;

/// What a secret is replaced with.
pub const REDACTED: &str = "***";

/// `text` with the userinfo of every URL in it redacted: the password of
/// `user:password@` becomes `***` (the user name stays, so that an operator
/// sees which account is used), and a userinfo without a colon, which may
/// be a token, becomes `***` whole.
///
/// A URL is found by its `://`; its userinfo runs to the last `@` before the
/// next whitespace, quote or backtick, so that a password holding a `/` or
/// an `@` is still covered (a path with an `@` in it is redacted too, which
/// errs on the safe side). Text without `://` is returned as it is, without
/// copying.
///
/// # Examples
///
/// ```
/// use resil_core::redact::userinfo;
///
/// assert_eq!(
///     userinfo("cluster url `redis://admin:s3cr3t@db:6379/0` is down"),
///     "cluster url `redis://admin:***@db:6379/0` is down"
/// );
/// assert_eq!(userinfo("redis://:s3cr3t@db/0"), "redis://:***@db/0");
/// assert_eq!(userinfo("https://tok3n@example.com/x"), "https://***@example.com/x");
/// assert_eq!(userinfo("redis://db:6379/0"), "redis://db:6379/0");
/// ```
pub fn userinfo(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut changed = false;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        // the URL's text: up to whitespace, a quote or a backtick
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`'))
            .unwrap_or(tail.len());
        let url = &tail[..end];
        match url.rfind('@') {
            Some(at) => {
                let info = &url[..at];
                if let Some((user, _)) = info.split_once(':') {
                    out.push_str(user);
                    out.push(':');
                }
                out.push_str(REDACTED);
                out.push_str(&url[at..]);
                changed = true;
            }
            None => out.push_str(url),
        }
        rest = &tail[end..];
    }
    if !changed {
        return Cow::Borrowed(text);
    }
    out.push_str(rest);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_url_of_a_text_loses_its_password() {
        let text = r#"a = "redis://u:p1@h:1/0", b = 'rediss://:p2@h2' and `unix://p3@/tmp/s`"#;
        let out = userinfo(text);
        for secret in ["p1", "p2", "p3"] {
            assert!(!out.contains(secret), "{out}");
        }
        assert_eq!(
            out,
            r#"a = "redis://u:***@h:1/0", b = 'rediss://:***@h2' and `unix://***@/tmp/s`"#
        );
    }

    #[test]
    fn a_password_with_slashes_or_at_signs_is_covered() {
        assert_eq!(userinfo("redis://u:pa/ss@h/0"), "redis://u:***@h/0");
        assert_eq!(userinfo("redis://u:p@ss@h/0"), "redis://u:***@h/0");
    }

    #[test]
    fn text_without_credentials_is_not_copied() {
        for text in ["", "no url", "redis://h:1/0", "x://", "a :// b"] {
            assert!(matches!(userinfo(text), Cow::Borrowed(t) if t == text));
        }
    }
}
