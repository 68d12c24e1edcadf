//! Small readings of Rust syntax shared by the three macros: integer
//! literals, paths and types as a person writes them.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Expr, ExprLit, ExprUnary, Lit, Type, UnOp};

/// An integer literal, possibly negated: units and capacities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IntLiteral {
    /// A non-negative literal (may still be 0 or exceed `u32`; one too large
    /// even for `u128` reads as `u128::MAX`).
    Value(u128),
    /// `-n`.
    Negative,
}

/// The one reader of integer literals: `2`, `-1`, `(2)`; `None` for any
/// other expression.
pub(crate) fn int_literal(expr: &Expr) -> Option<IntLiteral> {
    match expr {
        // `-3` inside an attribute's `key = value` reaches us as one literal
        // (syn reads a leading minus into it), not as a negation.
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) if i.base10_digits().starts_with('-') => Some(IntLiteral::Negative),
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => Some(IntLiteral::Value(i.base10_parse().unwrap_or(u128::MAX))),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => {
            matches!(int_literal(expr), Some(IntLiteral::Value(_))).then_some(IntLiteral::Negative)
        }
        Expr::Paren(p) => int_literal(&p.expr),
        Expr::Group(g) => int_literal(&g.expr),
        _ => None,
    }
}

/// A path as written, without spaces: `crate::DB_WRITE`.
pub(crate) fn path_text(path: &syn::Path) -> String {
    let mut text = String::new();
    if path.leading_colon.is_some() {
        text.push_str("::");
    }
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    text.push_str(&segments.join("::"));
    text
}

/// Tokens as a person writes them: `Vec<u8>`, not `Vec < u8 >`.
pub(crate) fn pretty(tokens: &impl ToTokens) -> String {
    let text = tokens.to_token_stream().to_string();
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let prev = if i > 0 { chars[i - 1] } else { ' ' };
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            if matches!(prev, '<' | '&' | ':' | '(' | '[' | '\'')
                || matches!(next, '<' | '>' | ',' | ':' | ')' | ']')
            {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// The spans of the first and last tokens of `tokens`: generated tokens
/// spanned first-to-last make rustc report an error on the whole range
/// (what `syn::Error::new_spanned` does).
pub(crate) fn span_range(tokens: &impl ToTokens) -> (Span, Span) {
    let mut iter = tokens.to_token_stream().into_iter();
    let first = iter.next().map_or_else(Span::call_site, |t| t.span());
    let last = iter.last().map_or(first, |t| t.span());
    (first, last)
}

/// The span of the whole attribute, for the only errors with no better token.
pub(crate) fn attribute_span() -> Span {
    Span::call_site()
}

/// A type with no lifetime but `'static` (so no elided reference either):
/// usable in `Operation::Args`.
pub(crate) fn owned(ty: &Type) -> bool {
    fn scan(tokens: TokenStream) -> bool {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, token) in tokens.iter().enumerate() {
            let next_is = |offset: usize, text: &str| {
                tokens
                    .get(i + offset)
                    .is_some_and(|t| t.to_string() == text)
            };
            match token {
                // `&'static T` is owned enough; `&T` and `&'a T` are not.
                TokenTree::Punct(p)
                    if p.as_char() == '&' && !(next_is(1, "'") && next_is(2, "static")) =>
                {
                    return false;
                }
                TokenTree::Punct(p) if p.as_char() == '\'' && !next_is(1, "static") => {
                    return false
                }
                TokenTree::Group(g) if !scan(g.stream()) => return false,
                _ => {}
            }
        }
        true
    }
    scan(ty.to_token_stream())
}

/// The float a type names, as written: `f32` or `f64`, behind any
/// references or parentheses, with the integer type of its bits (`u32`,
/// `u64`). `None` for any other type, a float inside one included.
pub(crate) fn float_type(ty: &Type) -> Option<(&syn::Ident, &'static str)> {
    let mut inner = ty;
    loop {
        match inner {
            Type::Reference(reference) => inner = &reference.elem,
            Type::Paren(paren) => inner = &paren.elem,
            Type::Group(group) => inner = &group.elem,
            _ => break,
        }
    }
    let Type::Path(path) = inner else {
        return None;
    };
    let float = path.path.get_ident().filter(|_| path.qself.is_none())?;
    match float.to_string().as_str() {
        "f32" => Some((float, "u32")),
        "f64" => Some((float, "u64")),
        _ => None,
    }
}

/// `ty` with every elided lifetime named `lifetime`: a lifetime after each
/// `&` that has none, and `'_` renamed; a named lifetime is kept. For a
/// signature whose `impl Trait` return type must name what it captures.
pub(crate) fn name_elided(ty: &Type, lifetime: &syn::Lifetime) -> TokenStream {
    fn rewrite(tokens: TokenStream, lifetime: &syn::Lifetime) -> TokenStream {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut out = TokenStream::new();
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Punct(p) if p.as_char() == '&' => {
                    out.extend([tokens[i].clone()]);
                    let named = matches!(tokens.get(i + 1), Some(TokenTree::Punct(q)) if q.as_char() == '\'');
                    if !named {
                        lifetime.to_tokens(&mut out);
                    }
                }
                TokenTree::Punct(p)
                    if p.as_char() == '\''
                        && matches!(tokens.get(i + 1), Some(TokenTree::Ident(id)) if id == "_") =>
                {
                    lifetime.to_tokens(&mut out);
                    i += 1; // the `_`
                }
                TokenTree::Group(g) => {
                    let mut group =
                        proc_macro2::Group::new(g.delimiter(), rewrite(g.stream(), lifetime));
                    group.set_span(g.span());
                    out.extend([TokenTree::Group(group)]);
                }
                token => out.extend([token.clone()]),
            }
            i += 1;
        }
        out
    }
    rewrite(ty.to_token_stream(), lifetime)
}
