#[derive(Debug, PartialEq)]
pub enum DbError {
    Unavailable,
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for DbError {
    fn from(r: resil::Rejection) -> Self {
        DbError::Rejected(r)
    }
}

use std::fmt::Display;

#[resil::circuit_breaker(name = "pass-generic", fallback = degraded)]
fn describe<'a, T, const N: usize>(items: &'a [T; N], sep: impl AsRef<str>) -> Result<String, DbError>
where
    T: Display,
{
    let parts: Vec<String> = items.iter().map(|t| t.to_string()).collect();
    Ok(parts.join(sep.as_ref()))
}

fn degraded<T: Display, const N: usize>(_items: &[T; N], _sep: impl AsRef<str>) -> Result<String, DbError> {
    Ok(String::new())
}

pub struct Repo<T> {
    items: Vec<T>,
}

impl<T: Clone + Send + Sync> Repo<T> {
    #[resil::circuit_breaker(name = "pass-generic-impl")]
    async fn first<'a>(&'a self, skip: usize) -> Result<&'a T, DbError> {
        self.items.get(skip).ok_or(DbError::Unavailable)
    }
}

fn main() {
    assert_eq!(describe(&[1, 2, 3], ", ").unwrap(), "1, 2, 3");
    let repo = Repo { items: vec![1] };
    let _future = repo.first(0);
}
