//! Unit tests of parsing, the contract rules and expansion. They run without
//! the `herta` crate: only tokens in, errors and tokens out.

use proc_macro2::TokenStream;
use quote::quote;

use crate::best_effort::upper_camel;
use crate::diag::Errors;
use crate::handler::Handler;
use crate::model::{Operation, TimeoutError};
use crate::parse::parse_timeout;
use crate::syntax::pretty;
use crate::{classify, expand, parse, resources, rules};

/// Runs parse + rules; returns the model and every error message.
fn run(args: TokenStream, item: TokenStream) -> (Operation, Vec<String>) {
    let mut errors = Errors::default();
    let op = parse::operation(args, item, &mut errors).expect("test items are functions");
    rules::check(&op, &mut errors);
    let messages = errors.messages();
    (op, messages)
}

fn errors(args: TokenStream) -> Vec<String> {
    run(
        args,
        quote!(
            async fn render(job: String, n: u32) -> Result<String, E> {
                todo!()
            }
        ),
    )
    .1
}

fn one_error(args: TokenStream) -> String {
    let errors = errors(args);
    assert_eq!(errors.len(), 1, "expected one error, got {errors:#?}");
    errors.into_iter().next().unwrap()
}

/// Every message is one rule sentence and one help line.
fn assert_shape(message: &str) {
    let lines: Vec<&str> = message.lines().collect();
    assert_eq!(lines.len(), 2, "rule + help: {message}");
    assert!(lines[1].starts_with("help: "), "{message}");
}

#[test]
fn a_full_contract_resolves_without_errors() {
    let (contract, errors) = run(
        quote!(
            effect = Idempotent,
            resources("worker" = 1, DB_WRITE = 3),
            admission = Reject,
            retry(on = [Transient, Uncertain], max = 3),
            timeout = "2s",
            serialize_by(brand, scope = "catalogue"),
            name = "replace",
            wrapper = Replace
        ),
        quote!(
            pub async fn replace_catalogue(
                ctx: herta::Context,
                brand: &str,
                rows: Vec<u32>,
            ) -> Result<u64, E> {
                todo!()
            }
        ),
    );
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(contract.name(), "replace");
    assert_eq!(contract.wrapper().to_string(), "Replace");
    assert_eq!(contract.attr.effect(), herta_contract::Effect::Idempotent);
    assert_eq!(contract.attr.admission(), herta_contract::Admission::Reject);
    assert_eq!(contract.resources().len(), 2);
    assert_eq!(contract.resources()[1].units, 3);
    let retry = contract.retry().unwrap();
    assert_eq!(
        retry.on,
        [
            herta_contract::Outcome::Transient,
            herta_contract::Outcome::Uncertain
        ]
    );
    assert_eq!(retry.max, 3);
    assert_eq!(contract.timeout().unwrap().0, 2_000);
    let key = contract.key().unwrap();
    assert_eq!(key.param, 0, "the context is not a call parameter");
    assert_eq!(key.scope.as_deref(), Some("catalogue"));
    assert!(contract.callable());
}

#[test]
fn defaults() {
    let (contract, errors) = run(
        quote!(effect = Pure),
        quote!(
            async fn render_page() -> Result<(), E> {
                Ok(())
            }
        ),
    );
    assert!(errors.is_empty());
    assert_eq!(contract.name(), "render_page");
    assert_eq!(contract.wrapper().to_string(), "RenderPage");
    assert_eq!(contract.attr.admission(), herta_contract::Admission::Wait);
    assert!(contract.retry().is_none() && contract.timeout().is_none() && contract.key().is_none());
}

#[test]
fn rule_1_effect_is_required() {
    let message = one_error(quote!(resources("worker" = 1)));
    assert!(message.contains("must declare its `effect`"), "{message}");
    assert_shape(&message);
    // Misspelt or unreadable: the other error says it, not this rule.
    assert!(!one_error(quote!(efect = Pure)).contains("must declare"));
    assert!(!one_error(quote!(effect Pure)).contains("must declare"));
}

#[test]
fn rule_2_unknown_words_suggest_the_closest() {
    let message = one_error(quote!(effect = Idempotnet));
    assert!(
        message.starts_with("`Idempotnet` is not an effect"),
        "{message}"
    );
    assert!(
        message.ends_with("help: did you mean `Idempotent`?"),
        "{message}"
    );
    let message = one_error(quote!(effect = Idempotent, retry(on = Transeint, max = 3)));
    assert!(message.ends_with("did you mean `Transient`?"), "{message}");
    let message = one_error(quote!(effect = Idempotent, admission = Rejct));
    assert!(message.ends_with("did you mean `Reject`?"), "{message}");
    let message = one_error(quote!(
        effect = Idempotent,
        retires(on = Transient, max = 3)
    ));
    assert!(
        message.starts_with("`retires` is not a key of `#[herta::operation(...)]`"),
        "{message}"
    );
    assert!(message.ends_with("did you mean `retry`?"), "{message}");
    let message = one_error(quote!(
        effect = Idempotent,
        retry(on = Transient, maximum = 3)
    ));
    assert!(
        message.starts_with("`maximum` is not a key of `retry(...)`"),
        "{message}"
    );
    // Other libraries' names for `max`: one error each, naming `max` and
    // what it counts, with no "must say how many attempts" after it (the
    // synonym wins over did-you-mean, which `max_retries` would also hit).
    for name in ["attempts", "max_retries"] {
        let key = quote::format_ident!("{name}");
        let message = one_error(quote!(
            effect = Idempotent,
            retry(on = Transient, #key = 3)
        ));
        assert!(
            message.starts_with(&format!("`{name}` is not a key of `retry(...)`")),
            "{message}"
        );
        assert!(
            message.contains("did you mean `max`? it counts every attempt, the first included"),
            "{message}"
        );
    }
    let message = one_error(quote!(effect = Banana));
    assert!(
        message.contains("help: write one of `Pure`, `Idempotent` or `NonIdempotent`"),
        "{message}"
    );
    for message in errors(quote!(effect = Idempotnet, retires = 1, admission = Rejct)) {
        assert_shape(&message);
    }
}

#[test]
fn rule_3_uses_the_contract_table() {
    let herta_contract::RetryVerdict::Forbidden(reason) = herta_contract::retry_verdict(
        herta_contract::Effect::NonIdempotent,
        herta_contract::Outcome::Uncertain,
    ) else {
        panic!("the table forbids it");
    };
    let message = one_error(quote!(
        effect = NonIdempotent,
        retry(on = [Transient, Uncertain], max = 3)
    ));
    assert!(message.contains(reason), "{message}");
    assert!(message
        .starts_with("an operation with `effect = NonIdempotent` must not retry `Uncertain`"));
    assert_shape(&message);
    assert!(errors(quote!(
        effect = Idempotent,
        retry(on = [Transient, Uncertain], max = 3)
    ))
    .is_empty());
    assert!(errors(quote!(effect = Pure, retry(on = Uncertain, max = 2))).is_empty());
}

#[test]
fn rule_4_never_retried_outcomes() {
    for effect in ["Pure", "Idempotent", "NonIdempotent"] {
        let effect: syn::Ident = syn::parse_str(effect).unwrap();
        for outcome in ["Throttled", "Success", "Permanent"] {
            let word: syn::Ident = syn::parse_str(outcome).unwrap();
            let message = one_error(quote!(effect = #effect, retry(on = #word, max = 3)));
            let expected = if outcome == "Throttled" {
                "`Throttled` is retried only after a delay: ".to_owned()
            } else {
                format!("`{outcome}` is never retried: ")
            };
            assert!(message.starts_with(&expected), "{message}");
            assert_shape(&message);
        }
        // With a backoff, `Throttled` may be retried; the others never.
        assert!(errors(quote!(
            effect = #effect,
            retry(on = [Transient, Throttled], max = 3, backoff(base = "10ms", cap = "1s"))
        ))
        .is_empty());
        let message = one_error(quote!(
            effect = #effect,
            retry(on = Permanent, max = 3, backoff(base = "10ms", cap = "1s"))
        ));
        assert!(
            message.starts_with("`Permanent` is never retried"),
            "{message}"
        );
    }
    let message = one_error(quote!(effect = Pure, retry(on = Throttled, max = 3)));
    assert!(message.contains("add `backoff(base = "), "{message}");
}

#[test]
fn rule_13_backoff() {
    let one = |attr: TokenStream| one_error(attr);
    assert!(errors(quote!(
        effect = Pure,
        retry(
            on = Transient,
            max = 3,
            backoff(base = "1s", cap = "1s", jitter = Equal)
        )
    ))
    .is_empty());
    for jitter in ["Full", "Equal", "None"] {
        let jitter: syn::Ident = syn::parse_str(jitter).unwrap();
        assert!(errors(quote!(
            effect = Pure,
            retry(on = Transient, max = 3, backoff(base = "1ms", cap = "1h", jitter = #jitter))
        ))
        .is_empty());
    }
    let message = one(quote!(
        effect = Pure,
        retry(on = Transient, max = 3, backoff(base = "2s", cap = "1s"))
    ));
    assert!(
        message.contains("`base = \"2s\"` is above `cap = \"1s\"`"),
        "{message}"
    );
    assert_shape(&message);
    let message = one(quote!(
        effect = Pure,
        retry(on = Transient, max = 3, backoff(base = "0ms", cap = "1s"))
    ));
    assert!(message.contains("is no delay"), "{message}");
    let message = one(quote!(
        effect = Pure,
        retry(on = Transient, max = 3, backoff(base = "10 ms", cap = "1s"))
    ));
    assert!(message.contains("is not a duration"), "{message}");
    let message = one(quote!(
        effect = Pure,
        retry(on = Transient, max = 3, backoff(base = "10ms", cap = "2h"))
    ));
    assert!(message.contains("longer than the 1 hour"), "{message}");
    let message = one(quote!(
        effect = Pure,
        retry(on = Transient, max = 3, backoff(base = "10ms"))
    ));
    assert!(message.contains("must say its `cap`"), "{message}");
    let message = one(quote!(
        effect = Pure,
        retry(on = Transient, max = 3, backoff(base = 10, cap = "1s"))
    ));
    assert!(message.contains("`base` needs a unit"), "{message}");
    let message = one(quote!(
        effect = Pure,
        retry(
            on = Transient,
            max = 3,
            backoff(base = "1ms", cap = "1s", jitter = Half)
        )
    ));
    assert!(message.contains("`Half` is not a jitter mode"), "{message}");
    let message = one(quote!(
        effect = Pure,
        retry(
            on = Transient,
            max = 3,
            backoff(base = "1ms", cap = "1s", jiter = Full)
        )
    ));
    assert!(message.contains("did you mean `jitter`"), "{message}");
    let message = one(quote!(
        effect = Pure,
        retry(on = Transient, max = 3, backoff = "1s")
    ));
    assert!(message.contains("`backoff` takes a list"), "{message}");
}

#[test]
fn rule_5_retry_must_be_able_to_retry() {
    assert!(
        one_error(quote!(effect = Pure, retry(on = Transient, max = 0)))
            .contains("`retry(max = 0)` allows no attempt")
    );
    assert!(
        one_error(quote!(effect = Pure, retry(on = Transient, max = 1)))
            .contains("`retry(max = 1)` can never retry")
    );
    assert!(one_error(quote!(effect = Pure, retry(on = [], max = 2))).contains("lists no outcome"));
    assert!(one_error(quote!(effect = Pure, retry(max = 2))).contains("must say which outcomes"));
    assert!(one_error(quote!(effect = Pure, retry(on = Transient))).contains("how many attempts"));
    assert!(one_error(quote!(
        effect = Pure,
        retry(on = [Transient, Transient], max = 2)
    ))
    .contains("listed twice"));
    assert!(one_error(quote!(
        effect = Pure,
        retry(on = Transient, max = 99999999999)
    ))
    .contains("without `backoff` allows at most 100 attempts"));
    assert!(
        one_error(quote!(effect = Pure, retry(on = Transient, max = 101)))
            .contains("without `backoff` allows at most 100 attempts")
    );
    assert!(errors(quote!(effect = Pure, retry(on = Transient, max = 100))).is_empty());
    assert!(errors(quote!(
        effect = Pure,
        retry(
            on = Transient,
            max = 10000,
            backoff(base = "1ms", cap = "1s")
        )
    ))
    .is_empty());
    assert!(one_error(quote!(
        effect = Pure,
        retry(
            on = Transient,
            max = 10001,
            backoff(base = "1ms", cap = "1s")
        )
    ))
    .contains("more than the 10000 attempts"));
    assert!(one_error(quote!(effect = Pure, retry = 3)).contains("`retry` takes a list"));
}

#[test]
fn rule_6_units() {
    let message = one_error(quote!(effect = Pure, resources("worker" = 0)));
    assert!(
        message.starts_with("resource units must be at least 1"),
        "{message}"
    );
    assert_shape(&message);
    assert!(
        one_error(quote!(effect = Pure, resources("worker" = -1))).contains("cannot be negative")
    );
    assert!(
        one_error(quote!(effect = Pure, resources("worker" = 5000000000)))
            .contains("(a capacity is a `u32`)")
    );
    assert!(one_error(quote!(effect = Pure, resources("worker" = N))).contains("integer literal"));
    assert!(one_error(quote!(effect = Pure, resources("" = 1))).contains("cannot be empty"));
    assert!(
        one_error(quote!(effect = Pure, resources(WORKER))).contains("needs the number of units")
    );
}

#[test]
fn rule_7_each_resource_once() {
    let message = one_error(quote!(
        effect = Pure,
        resources("worker" = 1, "db" = 1, "worker" = 2)
    ));
    assert!(
        message.starts_with("\"worker\" is named twice"),
        "{message}"
    );
    let message = one_error(quote!(
        effect = Pure,
        resources(crate::DB = 1, crate::DB = 2)
    ));
    assert!(
        message.starts_with("`crate::DB` is named twice"),
        "{message}"
    );
    let (contract, _) = run(
        quote!(effect = Pure, resources("worker" = 1, "worker" = 2)),
        quote!(
            async fn f() -> Result<(), E> {
                todo!()
            }
        ),
    );
    assert_eq!(
        contract.resources().len(),
        1,
        "the repeat is dropped from the best-effort contract"
    );
}

#[test]
fn rule_8_serialize_by_names_a_parameter() {
    let message = one_error(quote!(effect = Pure, serialize_by = jb));
    assert!(
        message.starts_with(
            "`serialize_by = jb` names no parameter of `render`; its parameters are `job` and `n`"
        ),
        "{message}"
    );
    assert!(message.ends_with("did you mean `job`?"));
    let (_, errors) = run(
        quote!(effect = Pure, serialize_by = ctx),
        quote!(
            async fn f(ctx: Context, id: u64) -> Result<(), E> {
                todo!()
            }
        ),
    );
    assert!(errors[0].contains("it is the `Context`"), "{errors:#?}");
    let (_, errors) = run(
        quote!(effect = Pure, serialize_by = id),
        quote!(
            async fn f() -> Result<(), E> {
                todo!()
            }
        ),
    );
    assert!(errors[0].contains("has no parameter"), "{errors:#?}");
    assert!(one_error(quote!(effect = Pure, serialize_by = "job")).contains("not a string"));
    assert!(one_error(quote!(effect = Pure, serialize_by(job, n))).contains("takes one parameter"));
    assert!(
        one_error(quote!(effect = Pure, serialize_by(job, scope = "")))
            .contains("scope cannot be empty")
    );
    assert!(
        one_error(quote!(effect = Pure, serialize_by(job, scop = "x")))
            .contains("did you mean `scope`?")
    );
}

#[test]
fn rule_10_timeouts() {
    assert_eq!(parse_timeout("250ms"), Ok(250));
    assert_eq!(parse_timeout("2s"), Ok(2_000));
    assert_eq!(parse_timeout("1m"), Ok(60_000));
    assert_eq!(parse_timeout("1h"), Ok(3_600_000));
    assert_eq!(parse_timeout("5 sec"), Err(TimeoutError::Unparsable));
    assert_eq!(parse_timeout("1.5s"), Err(TimeoutError::Unparsable));
    assert_eq!(parse_timeout("s"), Err(TimeoutError::Unparsable));
    assert_eq!(parse_timeout("10"), Err(TimeoutError::Unparsable));
    assert_eq!(parse_timeout("0ms"), Err(TimeoutError::Zero));
    assert_eq!(parse_timeout("61m"), Err(TimeoutError::TooLong));
    assert_eq!(
        parse_timeout("99999999999999999999h"),
        Err(TimeoutError::TooLong)
    );
    assert!(one_error(quote!(effect = Pure, timeout = "5 sec")).contains("is not a duration"));
    assert!(one_error(quote!(effect = Pure, timeout = "0ms")).contains("before it starts"));
    assert!(one_error(quote!(effect = Pure, timeout = "2h")).contains("1 hour"));
    assert!(one_error(quote!(effect = Pure, timeout = 2)).contains("needs a unit"));
}

#[test]
fn rule_11_handler_shape() {
    let shape = |item: TokenStream| run(quote!(effect = Pure), item);
    let (contract, errors) = shape(quote!(
        fn f() -> Result<(), E> {
            todo!()
        }
    ));
    assert!(errors[0].contains("must be an `async fn`") && !contract.callable());
    let (_, errors) = shape(quote!(
        async fn f() {}
    ));
    assert!(errors[0].contains("returns nothing"));
    let (_, errors) = shape(quote!(
        async fn f() -> u32 {
            1
        }
    ));
    assert!(errors[0].contains("returns `u32`"), "{errors:#?}");
    let (_, errors) = shape(quote!(
        async fn f() -> Vec<u8> {
            todo!()
        }
    ));
    assert!(errors[0].contains("returns `Vec<u8>`"), "{errors:#?}");
    let (contract, errors) = shape(quote!(
        async fn f() -> io::Result<u8> {
            todo!()
        }
    ));
    assert!(
        errors.is_empty() && contract.callable(),
        "aliases are for rustc to check"
    );
    let (_, errors) = shape(quote!(
        async fn f<T, const N: usize>(t: [T; N]) -> Result<(), E> {
            todo!()
        }
    ));
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(errors[0].contains("type parameters") && errors[1].contains("const parameters"));
    let (contract, errors) = shape(quote!(
        async fn f<'a>(s: &'a str) -> Result<(), E> {
            todo!()
        }
    ));
    assert!(
        errors.is_empty() && contract.callable(),
        "lifetimes are fine"
    );
    let (contract, errors) = shape(quote!(
        async fn f(&self) -> Result<(), E> {
            todo!()
        }
    ));
    assert!(errors[0].contains("cannot take `self`") && contract.in_impl());
    let (_, errors) = shape(quote!(
        async unsafe fn f() -> Result<(), E> {
            todo!()
        }
    ));
    assert!(errors[0].contains("`unsafe fn`"));
    let (_, errors) = shape(quote!(
        async fn f(x: impl Display) -> Result<(), E> {
            todo!()
        }
    ));
    assert!(errors[0].contains("`impl Trait`"));
    let (_, errors) = shape(quote!(
        async fn f(x: u32, ctx: herta::Context) -> Result<(), E> {
            todo!()
        }
    ));
    assert!(errors[0].contains("must be the first parameter"));
    let (_, errors) = shape(quote!(
        async fn f(ctx: &Context) -> Result<(), E> {
            todo!()
        }
    ));
    assert!(errors[0].contains("by value"));
    let message = one_error(quote!(effect = Pure, effect = Idempotent));
    assert!(message.starts_with("`effect` is given twice"), "{message}");
    assert!(one_error(quote!(
        effect = Pure,
        retry(on = Transient, max = 2, max = 3)
    ))
    .contains("`max` is given twice in `retry(...)`"));
}

#[test]
fn every_violation_is_reported_together() {
    let errors = errors(quote!(
        effect = NonIdempotent,
        resources("worker" = 0, "worker" = 1),
        retry(on = [Uncertain, Throttled], max = 1),
        timeout = "soon",
        serialize_by = customer,
        admission = Wiat
    ));
    assert_eq!(errors.len(), 8, "{errors:#?}");
    for message in &errors {
        assert_shape(message);
    }
}

#[test]
fn shape_errors() {
    assert!(one_error(quote!(effect)).contains("`effect` needs a value"));
    assert!(one_error(quote!(effect(Pure))).contains("not a list"));
    assert!(one_error(quote!(effect = "Pure")).contains("remove the quotes: `effect = Pure`"));
    assert!(one_error(quote!(effect = Pure, "x")).contains("found a literal"));
    assert!(one_error(quote!(effect = Pure, resources = 1)).contains("takes a list"));
    assert!(one_error(quote!(effect = Pure, name = render)).contains("takes a string"));
    assert!(one_error(quote!(effect = Pure, name = "")).contains("cannot be empty"));
    assert!(one_error(quote!(effect = Pure, wrapper = a::B)).contains("name of the type"));
    // Words qualified as `herta::Type::Word` are fine; any other prefix is not.
    assert!(errors(quote!(
        effect = herta::Effect::Pure,
        admission = ::herta::Admission::Reject,
        retry(on = herta::Outcome::Transient, max = 2)
    ))
    .is_empty());
    let message = one_error(quote!(effect = foo::bar::Idempotent));
    assert!(
        message.starts_with("`effect` takes an effect by name, such as `Idempotent` or `herta::Effect::Idempotent`; `foo::bar::Idempotent` is not one"),
        "{message}"
    );
    assert!(
        message.ends_with("help: write `effect = Idempotent`"),
        "{message}"
    );
    assert!(one_error(quote!(effect = Effect::Pure)).contains("`Effect::Pure` is not one"));
    assert!(
        one_error(quote!(effect = Pure, admission = Admission::Reject))
            .contains("help: write `admission = Reject`")
    );
    assert!(one_error(quote!(
        effect = Pure,
        retry(on = Outcome::Transient, max = 2)
    ))
    .contains("`on` takes an outcome by name"));
    // Help lines use the names written.
    assert!(
        one_error(quote!(effect = Pure, wrapper = "Ledger2")).ends_with(
            "help: remove the quotes: `wrapper = Ledger2`; it is declared next to the function"
        )
    );
    assert!(one_error(quote!(effect = Pure, name = render)).ends_with("write `name = \"render\"`"));
}

#[test]
fn names_and_types() {
    assert_eq!(upper_camel("replace_catalogue"), "ReplaceCatalogue");
    assert_eq!(upper_camel("render"), "Render");
    assert_eq!(upper_camel("_private_op2"), "PrivateOp2");
    assert_eq!(
        pretty(&quote!(Vec<Option<&'static str>>)),
        "Vec<Option<&'static str>>"
    );
    assert_eq!(
        pretty(&quote!(std::collections::HashMap<u8, u8>)),
        "std::collections::HashMap<u8, u8>"
    );
}

#[test]
fn call_parameters_keep_their_names_unless_they_would_shadow() {
    let handler: Handler = syn::parse_quote!(
        async fn user(
            ctx: herta::Context,
            user: u64,
            mut rows: Vec<u8>,
            (a, b): (u8, u8),
        ) -> Result<(), E> {
            todo!()
        }
    );
    assert!(handler.has_context);
    let names: Vec<String> = handler.params.iter().map(|p| p.name.to_string()).collect();
    assert_eq!(names, ["__herta_arg1", "rows", "__herta_arg3"]);
    assert_eq!(handler.params[0].declared.as_ref().unwrap(), "user");
}

/// The expansion is valid Rust, with and without errors.
#[test]
fn expansions_parse() {
    let cases = [
        (
            quote!(
                effect = Idempotent,
                resources("worker" = 1, DB = 2),
                retry(on = Transient, max = 3),
                serialize_by = brand
            ),
            quote!(
                pub async fn f(ctx: Context, brand: &str, n: u32) -> Result<u32, E> {
                    todo!()
                }
            ),
        ),
        (
            quote!(effect = Pure),
            quote!(
                async fn f() -> std::io::Result<()> {
                    Ok(())
                }
            ),
        ),
        (
            quote!(),
            quote!(
                fn f<T>(t: T) -> u32 {
                    1
                }
            ),
        ),
        (
            quote!(effect = Pure),
            quote!(
                async fn f(&self) -> Result<(), E> {
                    todo!()
                }
            ),
        ),
        (
            quote!(effect Pure),
            quote!(
                async fn f() -> Result<(), E> {
                    todo!()
                }
            ),
        ),
    ];
    for (args, item) in cases {
        let tokens = expand::operation(args, item);
        syn::parse2::<syn::File>(tokens.clone()).unwrap_or_else(|e| panic!("{e}: {tokens}"));
    }
    // Not a function: the item is kept, with the error.
    let tokens = expand::operation(
        quote!(effect = Pure),
        quote!(
            struct S;
        ),
    );
    assert!(tokens.to_string().contains("struct S"));
    assert!(tokens.to_string().contains("goes on an `async fn`"));
}

/// The wrapper carries the function's visibility and docs (before the
/// generated `# Contract` section); `ui-tests/tests/ui/pass/docs_carried.rs`
/// and `visibility.rs` check the same through rustc.
#[test]
fn the_wrapper_carries_visibility_and_docs() {
    let file: syn::File = syn::parse2(expand::operation(
        quote!(effect = Pure),
        quote!(
            /// Renders one page.
            #[doc = "Second line."]
            pub(crate) async fn render(job: String) -> Result<String, E> {
                todo!()
            }
        ),
    ))
    .unwrap();
    // The struct is declared in a private module and imported with the
    // function's visibility.
    let import = file
        .items
        .iter()
        .find_map(|item| match item {
            syn::Item::Use(u) => Some(u),
            _ => None,
        })
        .expect("a glob import of the wrapper");
    let vis = &import.vis;
    assert_eq!(quote!(#vis).to_string(), "pub (crate)");
    let wrapper = file
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Mod(m) => m.content.as_ref(),
            _ => None,
        })
        .flat_map(|(_, items)| items)
        .find_map(|item| match item {
            syn::Item::Struct(s) if s.ident == "Render" => Some(s),
            _ => None,
        })
        .expect("a wrapper struct");
    let docs: Vec<String> = wrapper
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => s.value(),
                other => panic!("doc is not a string: {}", quote!(#other)),
            },
            other => panic!("doc is not `doc = ...`: {}", quote!(#other)),
        })
        .collect();
    assert_eq!(docs[..2], [" Renders one page.", "Second line."]);
    assert!(docs.iter().any(|d| d == "# Contract"), "{docs:#?}");
}

/// A borrowed key of a standard unsized type is owned with `ToOwned`; any
/// other key is cloned through `Bound::key`, which needs no bound on the
/// type, so the key bounds are checked once, at `bind`.
#[test]
fn key_types() {
    let expand = |param: TokenStream| {
        expand::operation(
            quote!(effect = Pure, serialize_by = k),
            quote!(
                async fn f(#param) -> Result<(), E> {
                    todo!()
                }
            ),
        )
        .to_string()
    };
    for borrowed in [
        quote!(k: &str),
        quote!(k: &[u8]),
        quote!(k: &std::path::Path),
        quote!(k: &'static str),
    ] {
        let tokens = expand(borrowed.clone());
        assert!(
            tokens.contains("ToOwned > :: to_owned"),
            "{borrowed}: {tokens}"
        );
        assert!(!tokens.contains("Bound :: key"), "{borrowed}");
    }
    for cloned in [
        quote!(k: String),
        quote!(k: &Brand),
        quote!(k: (u32, String)),
    ] {
        let tokens = expand(cloned.clone());
        assert!(tokens.contains("Bound :: key"), "{cloned}: {tokens}");
        assert!(!tokens.contains("ToOwned"), "{cloned}");
    }
    let tokens = expand(quote!(k: Brand));
    assert_eq!(
        tokens.matches("KeyBound").count(),
        1,
        "one key check: {tokens}"
    );
}

#[test]
fn operation_impl_needs_owned_parameters() {
    let with = |item: TokenStream| expand::operation(quote!(effect = Pure), item).to_string();
    assert!(with(quote!(
        async fn f(a: String, b: &'static str) -> Result<(), E> {
            todo!()
        }
    ))
    .contains(":: herta :: Operation for"));
    assert!(!with(quote!(
        async fn f(a: &str) -> Result<(), E> {
            todo!()
        }
    ))
    .contains(":: herta :: Operation for"));
    assert!(!with(quote!(
        async fn f(a: Cow<'_, str>) -> Result<(), E> {
            todo!()
        }
    ))
    .contains(":: herta :: Operation for"));
}

#[test]
fn resources_rules() {
    let entries = |tokens: TokenStream| {
        let entries: Vec<resources::Entry> =
            syn::parse::Parser::parse2(resources::entries, tokens).expect("valid syntax");
        resources::validate(&entries)
            .into_iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
    };
    assert!(entries(quote!(pub WORKER: "worker" = 4; DB: "db" = POOL + 1)).is_empty());
    let errors = entries(quote!(
        pub WORKER: "worker" = 0;
        RENDER: "worker" = 2;
        WORKER: "other" = 1;
        EMPTY: "" = 1;
        NEG: "neg" = -1;
    ));
    assert_eq!(errors.len(), 5, "{errors:#?}");
    assert!(errors[0].contains("capacity 0"));
    assert!(errors[1].contains("declared twice (also by `WORKER`)"));
    assert!(errors[2].contains("constant `WORKER` is declared twice"));
    assert!(errors[3].contains("cannot be empty"));
    assert!(errors[4].contains("negative"));
    for message in &errors {
        assert_shape(message);
    }
    let expanded = resources::expand(quote!(pub A: "a" = 1; A: "b" = 2;)).to_string();
    assert_eq!(
        expanded.matches("const A").count(),
        1,
        "a repeated constant is not emitted twice"
    );
}

#[test]
fn classify_rules() {
    let check = |input: TokenStream| {
        let input: syn::DeriveInput = syn::parse2(input).unwrap();
        let mut errors = Errors::default();
        if let syn::Data::Enum(data) = &input.data {
            for variant in &data.variants {
                let _ = classify::outcome_attr(&variant.attrs, &mut errors);
            }
        }
        errors.messages()
    };
    let errors = check(quote!(
        enum E {
            #[outcome(Transeint)]
            A,
            #[outcome(Success)]
            B,
            #[outcome]
            C,
            #[outcome(Transient, Uncertain)]
            D,
            #[outcome(Transient)]
            #[outcome(Permanent)]
            F,
            #[outcome(Transient)]
            G,
            H,
        }
    ));
    assert_eq!(errors.len(), 5, "{errors:#?}");
    assert!(errors[0].ends_with("did you mean `Transient`?"));
    assert!(errors[1].contains("cannot be classified as `Success`"));
    assert!(errors[2].contains("needs the outcome in parentheses"));
    assert!(errors[3].contains("takes one outcome name"));
    assert!(errors[4].contains("given twice"));
    for message in &errors {
        assert_shape(message);
    }
    let tokens = classify::derive(quote!(
        enum E {
            #[outcome(Transient)]
            A,
            B(u8),
        }
    ))
    .to_string();
    assert!(
        tokens.contains("Self :: A { .. } => :: herta :: Outcome :: Transient"),
        "{tokens}"
    );
    assert!(
        tokens.contains("Self :: B { .. } => :: herta :: Outcome :: Permanent"),
        "{tokens}"
    );
}

#[test]
fn only_herta_s_context_paths_name_the_context() {
    use crate::handler::is_context;
    let context = |ty: TokenStream| is_context(&syn::parse2(ty).expect("a type"));
    for ours in [
        quote!(Context),
        quote!(herta::Context),
        quote!(::herta::Context),
    ] {
        assert!(context(ours.clone()), "{ours} is herta's Context");
    }
    for theirs in [
        quote!(my::Context),
        quote!(opentelemetry::Context),
        quote!(crate::prelude::Context),
        quote!(::Context),
        quote!(a::herta::Context),
        quote!(herta::Context<'static>),
        quote!(std::task::Context<'_>),
        quote!(<T as herta::Has>::Context),
    ] {
        assert!(
            !context(theirs.clone()),
            "{theirs} is an ordinary parameter"
        );
    }
}

/// Errors come out in the order they are written in the attribute, though
/// the rules find them by topic (retry before resources before timeout).
#[test]
fn errors_are_emitted_in_source_order() {
    let args: TokenStream =
        r#"resources("worker" = 0), retry(on = [Uncertain], max = 2), timeout = "soon", effect = NonIdempotent"#
            .parse()
            .unwrap();
    let item: TokenStream = "async fn charge(customer: String) -> Result<u64, E> { todo!() }"
        .parse()
        .unwrap();
    let output = expand::operation(args, item).to_string();
    let at = |text: &str| {
        output
            .find(text)
            .unwrap_or_else(|| panic!("no {text:?} in {output}"))
    };
    let units = at("resource units must be at least 1");
    let uncertain = at("must not retry `Uncertain`");
    let timeout = at("is not a duration");
    assert!(units < uncertain && uncertain < timeout, "{output}");
}

/// A float key is one error on its type, in the user's words; a float
/// inside a type of the user's is left to rustc (it cannot be seen here).
#[test]
fn rule_8_a_float_cannot_be_a_key() {
    for (ty, float, bits) in [
        (quote!(f64), "f64", "u64"),
        (quote!(&f64), "f64", "u64"),
        (quote!(f32), "f32", "u32"),
    ] {
        let (_, errors) = run(
            quote!(effect = Idempotent, serialize_by = price),
            quote!(async fn quote(price: #ty) -> Result<u64, E> { todo!() }),
        );
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert_shape(&errors[0]);
        assert!(
            errors[0].starts_with(&format!(
                "`serialize_by = price` keys by an `{float}`, and a float cannot be a key"
            )),
            "{}",
            errors[0]
        );
        assert!(errors[0].contains(&format!("`price: {bits}`, from `{float}::to_bits`")));
    }
    for ty in [
        quote!(u64),
        quote!(String),
        quote!(Price),
        quote!(Option<f64>),
    ] {
        let (_, errors) = run(
            quote!(effect = Idempotent, serialize_by = price),
            quote!(async fn quote(price: #ty) -> Result<u64, E> { todo!() }),
        );
        assert!(errors.is_empty(), "{ty}: {errors:#?}");
    }
}
