//! The annotated items as the expansion reads them (serde's and thiserror's
//! `ast.rs`): the function with its receiver, parameters, return type and
//! resil attributes; the enum of a `derive(Classify)` with its variants.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{DeriveInput, LitStr};

use crate::attr::{self, AspectArgs, ClassifyEnum, ClassifyVariant};
use crate::ctxt::Ctxt;

/// How a parameter (or the receiver) is passed.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Passing {
    /// `&T`, `&self`: copied into every attempt and every fallback.
    Shared,
    /// `&mut T`, `&mut self`: reborrowed.
    Unique,
    /// Anything else (`String`, `impl Trait`, `self: Arc<Self>`): owned.
    Owned,
}

/// The receiver of a method.
pub(crate) struct Receiver {
    pub(crate) passing: Passing,
    /// `&Self`, `&mut Self`, `Self`, `Arc<Self>`.
    pub(crate) ty: syn::Type,
    pub(crate) span: Span,
}

/// A typed parameter.
pub(crate) struct Param {
    /// The binding the expansion uses: the user's identifier, or
    /// `__resil_argN` for a pattern (`(a, b): (u32, u32)`).
    pub(crate) ident: syn::Ident,
    /// The user's pattern when it is not a plain identifier.
    pub(crate) pattern: Option<syn::Pat>,
    /// `mut x`.
    pub(crate) mutable: bool,
    pub(crate) ty: syn::Type,
    pub(crate) passing: Passing,
    /// `impl Trait` somewhere in its type: it cannot be named in the expansion.
    pub(crate) has_impl_trait: bool,
    pub(crate) span: Span,
}

/// The declared return type.
pub(crate) struct Output {
    pub(crate) ty: syn::Type,
    /// `T` and `E` when written as `Result<T, E>`.
    pub(crate) ok: Option<syn::Type>,
    pub(crate) err: Option<syn::Type>,
}

/// The annotated function.
pub(crate) struct Func {
    /// The function, less its resil attributes.
    pub(crate) item: syn::ImplItemFn,
    /// Its resil attributes, in [`ORDER`](attr::ORDER).
    pub(crate) layers: Vec<AspectArgs>,
    pub(crate) receiver: Option<Receiver>,
    pub(crate) params: Vec<Param>,
    /// The return type, or why it is not accepted (no `-> ...`, not a
    /// `Result`), spanned on it.
    pub(crate) output: Result<Output, syn::Error>,
}

/// Parses the annotated item as a function or method (`ImplItemFn` accepts
/// both free functions and methods).
pub(crate) fn item(tokens: TokenStream) -> Result<syn::ImplItemFn, syn::Error> {
    match syn::parse2::<syn::ImplItemFn>(tokens.clone()) {
        Ok(f) => Ok(f),
        Err(err) => {
            if let Ok(f) = syn::parse2::<syn::TraitItemFn>(tokens.clone())
                && f.default.is_none()
            {
                return Err(syn::Error::new_spanned(
                    &f.sig,
                    "resil attributes need the function's body; put them on the implementation, not on the trait's declaration",
                ));
            }
            match syn::parse2::<syn::Item>(tokens) {
                Ok(item) if !matches!(item, syn::Item::Fn(_) | syn::Item::Verbatim(_)) => {
                    Err(syn::Error::new(
                        item_span(&item),
                        "resil attributes apply to functions and methods",
                    ))
                }
                _ => Err(err),
            }
        }
    }
}

fn item_span(item: &syn::Item) -> Span {
    use syn::Item::*;
    match item {
        Struct(i) => i.ident.span(),
        Enum(i) => i.ident.span(),
        Impl(i) => i.impl_token.span,
        Trait(i) => i.ident.span(),
        Mod(i) => i.ident.span(),
        Const(i) => i.ident.span(),
        Static(i) => i.ident.span(),
        Type(i) => i.ident.span(),
        Union(i) => i.ident.span(),
        other => other.span(),
    }
}

impl Func {
    /// The function `item` under the attribute being expanded, `first`,
    /// with the resil attributes it carries besides taken out of it.
    pub(crate) fn from_syn(cx: &Ctxt, first: AspectArgs, mut item: syn::ImplItemFn) -> Func {
        let layers = attr::layers(cx, first, &mut item.attrs);
        let mut receiver = None;
        let mut params = Vec::new();
        for (index, input) in item.sig.inputs.iter().enumerate() {
            match input {
                syn::FnArg::Receiver(r) => {
                    let (passing, ty) = match &r.kind {
                        syn::ReceiverKind::Reference(_, lifetime, Some(_)) => {
                            (Passing::Unique, syn::parse_quote!(&#lifetime mut Self))
                        }
                        syn::ReceiverKind::Reference(_, lifetime, None) => {
                            (Passing::Shared, syn::parse_quote!(&#lifetime Self))
                        }
                        syn::ReceiverKind::Typed(_, ty) => match &**ty {
                            syn::Type::Reference(t) if t.mutability.is_some() => {
                                (Passing::Unique, (**ty).clone())
                            }
                            syn::Type::Reference(_) => (Passing::Shared, (**ty).clone()),
                            _ => (Passing::Owned, (**ty).clone()),
                        },
                        _ => (Passing::Owned, syn::parse_quote!(Self)),
                    };
                    receiver = Some(Receiver {
                        passing,
                        ty,
                        span: r.self_token.span,
                    });
                }
                syn::FnArg::Typed(pt) => {
                    let passing = match &*pt.ty {
                        syn::Type::Reference(t) if t.mutability.is_some() => Passing::Unique,
                        syn::Type::Reference(_) => Passing::Shared,
                        _ => Passing::Owned,
                    };
                    let (ident, pattern, mutable) = match &*pt.pat {
                        syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                            (pi.ident.clone(), None, pi.mutability.is_some())
                        }
                        other => (
                            syn::Ident::new(&format!("__resil_arg{index}"), Span::call_site()),
                            Some(other.clone()),
                            false,
                        ),
                    };
                    params.push(Param {
                        ident,
                        pattern,
                        mutable,
                        ty: (*pt.ty).clone(),
                        passing,
                        has_impl_trait: has_impl_trait(&pt.ty),
                        span: pt.span(),
                    });
                }
            }
        }
        let output = output(&item.sig);
        Func {
            item,
            layers,
            receiver,
            params,
            output,
        }
    }

    pub(crate) fn is_async(&self) -> bool {
        self.item.sig.asyncness.is_some()
    }
}

/// The input of `#[derive(Classify)]`.
pub(crate) struct Enum<'a> {
    pub(crate) ident: &'a syn::Ident,
    pub(crate) generics: &'a syn::Generics,
    pub(crate) attrs: ClassifyEnum,
    /// Empty when the input is a struct or a union (already reported).
    variants: Vec<&'a syn::Variant>,
}

/// A variant of a `#[derive(Classify)]` enum.
pub(crate) struct Variant<'a> {
    pub(crate) ident: &'a syn::Ident,
    /// `#[classify(kind = "...")]`, else the variant's name.
    pub(crate) kind: LitStr,
}

impl<'a> Enum<'a> {
    pub(crate) fn from_syn(cx: &Ctxt, input: &'a DeriveInput) -> Enum<'a> {
        let attrs = ClassifyEnum::from_attrs(cx, &input.attrs);
        let variants = match &input.data {
            syn::Data::Enum(data) => data.variants.iter().collect(),
            syn::Data::Struct(s) => {
                cx.syn_error(syn::Error::new(
                    s.struct_token.span,
                    "`Classify` derives kind names for the variants of an enum; implement `resil::Classify` by hand for a struct",
                ));
                Vec::new()
            }
            syn::Data::Union(u) => {
                cx.syn_error(syn::Error::new(
                    u.union_token.span,
                    "`Classify` derives kind names for the variants of an enum",
                ));
                Vec::new()
            }
        };
        Enum {
            ident: &input.ident,
            generics: &input.generics,
            attrs,
            variants,
        }
    }

    /// The variants, in order. Each one's attributes are parsed when the
    /// iterator reaches it, so that a caller checking them on the way
    /// reports a variant's mistakes together, in source order.
    pub(crate) fn variants(&self, cx: &Ctxt) -> impl Iterator<Item = Variant<'a>> {
        self.variants.iter().map(move |v| Variant {
            ident: &v.ident,
            kind: ClassifyVariant::from_attrs(cx, &v.attrs)
                .kind
                .unwrap_or_else(|| LitStr::new(&v.ident.to_string(), v.ident.span())),
        })
    }
}

/// `impl Trait` anywhere in a type.
pub(crate) fn has_impl_trait(ty: &syn::Type) -> bool {
    mentions(ty.to_token_stream(), &|i| i == "impl")
}

/// Whether an identifier that `pred` accepts appears anywhere in `tokens`.
pub(crate) fn mentions(tokens: TokenStream, pred: &dyn Fn(&proc_macro2::Ident) -> bool) -> bool {
    tokens.into_iter().any(|tt| match tt {
        proc_macro2::TokenTree::Ident(i) => pred(&i),
        proc_macro2::TokenTree::Group(g) => mentions(g.stream(), pred),
        _ => false,
    })
}

/// The return type, when it is a `Result`: `Result<T, E>` (any path ending
/// in `Result`), or an alias with the error fixed (`io::Result<T>`,
/// `anyhow::Result<T>`) whose last segment ends in `Result`.
fn output(sig: &syn::Signature) -> Result<Output, syn::Error> {
    let syn::ReturnType::Type(_, ty) = &sig.output else {
        return Err(syn::Error::new(
            sig.ident.span(),
            format!(
                "resil attributes need a function that returns `Result<T, E>`; `{}` returns `()`",
                sig.ident
            ),
        ));
    };
    if has_impl_trait(ty) {
        return Err(syn::Error::new_spanned(
            ty,
            "resil attributes need a return type they can name; `impl Trait` in the return type is not supported",
        ));
    }
    let not_result = || {
        syn::Error::new_spanned(
            ty,
            format!(
                "resil attributes need a function that returns `Result<T, E>`; found `{}`",
                ty.to_token_stream()
                    .to_string()
                    .replace(" < ", "<")
                    .replace(" >", ">")
                    .replace(" ,", ",")
            ),
        )
    };
    let syn::Type::Path(tp) = &**ty else {
        return Err(not_result());
    };
    let Some(last) = tp.path.segments.last() else {
        return Err(not_result());
    };
    if tp.qself.is_some() || !last.ident.to_string().ends_with("Result") {
        return Err(not_result());
    }
    let mut ok = None;
    let mut err = None;
    if last.ident == "Result"
        && let syn::PathArguments::AngleBracketed(args) = &last.arguments
    {
        let types: Vec<&syn::Type> = args
            .args
            .iter()
            .filter_map(|a| match a {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect();
        if let [t, e] = types[..] {
            ok = Some(t.clone());
            err = Some(e.clone());
        }
    }
    Ok(Output {
        ty: (**ty).clone(),
        ok,
        err,
    })
}

/// Tokens as a person writes them: `Result<Item, DbError>`, `&Self`, `Self::degraded`.
pub(crate) fn tokens_text(tokens: TokenStream) -> String {
    let mut out = String::new();
    write_tokens(&mut out, tokens);
    out
}

fn write_tokens(out: &mut String, tokens: TokenStream) {
    let mut prev_word = false;
    for tt in tokens {
        match tt {
            proc_macro2::TokenTree::Ident(i) => {
                if prev_word {
                    out.push(' ');
                }
                out.push_str(&i.to_string());
                prev_word = true;
            }
            proc_macro2::TokenTree::Literal(l) => {
                if prev_word {
                    out.push(' ');
                }
                out.push_str(&l.to_string());
                prev_word = true;
            }
            proc_macro2::TokenTree::Punct(p) => {
                let c = p.as_char();
                match c {
                    ',' => out.push_str(", "),
                    '=' if p.spacing() == proc_macro2::Spacing::Alone => out.push_str(" = "),
                    '+' => out.push_str(" + "),
                    '>' if out.ends_with('-') => {
                        out.pop();
                        out.push_str(" -> ");
                    }
                    _ => out.push(c),
                }
                // No space after punctuation: `&Self`, `'a`.
                prev_word = false;
            }
            proc_macro2::TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    proc_macro2::Delimiter::Parenthesis => ("(", ")"),
                    proc_macro2::Delimiter::Bracket => ("[", "]"),
                    proc_macro2::Delimiter::Brace => ("{ ", " }"),
                    proc_macro2::Delimiter::None => ("", ""),
                };
                if prev_word && g.delimiter() == proc_macro2::Delimiter::Brace {
                    out.push(' ');
                }
                out.push_str(open);
                write_tokens(out, g.stream());
                out.push_str(close);
                prev_word = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::tokens_text;

    #[test]
    fn prints_types_as_written() {
        assert_eq!(
            tokens_text(quote!(Result<Item, DbError>)),
            "Result<Item, DbError>"
        );
        assert_eq!(tokens_text(quote!(&Self)), "&Self");
        assert_eq!(tokens_text(quote!(&'a mut Self)), "&'a mut Self");
        assert_eq!(tokens_text(quote!(Self::degraded)), "Self::degraded");
        assert_eq!(
            tokens_text(quote!(Box<dyn Fn(u32) -> u32 + Send>)),
            "Box<dyn Fn(u32) -> u32 + Send>"
        );
        assert_eq!(
            tokens_text(quote!(std::io::Result<u32>)),
            "std::io::Result<u32>"
        );
    }
}
