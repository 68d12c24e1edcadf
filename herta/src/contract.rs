//! [`Contract`]: the declared policy of an operation, as a constant.

use std::time::Duration;

use crate::outcome::{Admission, Effect, Outcome};
use crate::retry::Backoff;

/// The policy an operation declared with `#[herta::operation(...)]`.
///
/// Every wrapper type has it as `CONTRACT` (and through
/// [`Operation::CONTRACT`](crate::Operation::CONTRACT)); the runtime enforces
/// exactly this. It is built by the macro; read it through the accessors.
///
/// ```
/// use herta::{Admission, Effect, Failure, Outcome};
///
/// #[herta::operation(effect = Idempotent, resources("worker" = 2),
///                    retry(on = Transient, max = 3), timeout = "250ms")]
/// async fn render(job: String) -> Result<String, Failure<String>> { Ok(job) }
///
/// let c = Render::CONTRACT;
/// assert_eq!(c.operation(), "render");
/// assert_eq!(c.effect(), Effect::Idempotent);
/// assert_eq!(c.admission(), Admission::Wait);
/// assert_eq!(c.resources()[0].resource(), "worker");
/// assert_eq!(c.resources()[0].units(), 2);
/// assert_eq!(c.max_attempts(), 3);
/// assert_eq!(c.retry_on(), &[Outcome::Transient]);
/// assert_eq!(c.timeout(), Some(std::time::Duration::from_millis(250)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contract {
    operation: &'static str,
    effect: Effect,
    admission: Admission,
    resources: &'static [ResourceUse],
    retry_on: &'static [Outcome],
    max_attempts: u32,
    timeout: Option<Duration>,
    serialize_by: Option<KeySpec>,
    backoff: Option<Backoff>,
    max_wait: Option<Duration>,
    deadline: Option<Duration>,
    breaker: Option<&'static str>,
    breaker_constant: Option<&'static str>,
}

impl Contract {
    /// The contract the macro declared, field by field (see
    /// [`ContractFields`]).
    pub(crate) const fn from_fields(fields: ContractFields) -> Self {
        let ContractFields {
            operation,
            effect,
            admission,
            resources,
            retry_on,
            max_attempts,
            timeout,
            serialize_by,
            backoff,
            max_wait,
            deadline,
            breaker,
            breaker_constant,
        } = fields;
        Contract {
            operation,
            effect,
            admission,
            resources,
            retry_on,
            max_attempts,
            timeout,
            serialize_by,
            backoff,
            max_wait,
            deadline,
            breaker,
            breaker_constant,
        }
    }

    /// The operation's name, used in errors, stats and bind checks.
    pub const fn operation(&self) -> &'static str {
        self.operation
    }

    /// The declared side effect.
    pub const fn effect(&self) -> Effect {
        self.effect
    }

    /// What a call does when its key or a budget is busy (default `Wait`).
    pub const fn admission(&self) -> Admission {
        self.admission
    }

    /// The budgets one call holds while it runs, in declaration order.
    pub const fn resources(&self) -> &'static [ResourceUse] {
        self.resources
    }

    /// The outcomes after which an attempt is retried (empty: no retry).
    pub const fn retry_on(&self) -> &'static [Outcome] {
        self.retry_on
    }

    /// The most attempts one call makes, first attempt included (1: no retry).
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The attempts a call may make: [`max_attempts`](Self::max_attempts),
    /// at least 1 (a contract built by hand with 0 still runs its first).
    pub(crate) const fn attempts_allowed(&self) -> u32 {
        if self.max_attempts == 0 {
            1
        } else {
            self.max_attempts
        }
    }

    /// The limit on each attempt; each attempt gets a fresh one.
    ///
    /// On expiry the attempt's future is **dropped**, which cancels only what
    /// that future owns: work it handed elsewhere (`spawn_blocking`, a spawned
    /// task, a query already sent to a server) keeps going while the call's
    /// budgets are released or retried. Give such work its own deadline, or
    /// declare no `timeout`.
    pub const fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The parameter calls are serialized by, if any.
    pub const fn serialize_by(&self) -> Option<KeySpec> {
        self.serialize_by
    }

    /// The longest a `Wait` call waits, from admission, for its key and
    /// budgets together (`max_wait = "…"`); on expiry the call returns
    /// `Error::Throttled` naming what it was waiting for. `None`: no limit.
    pub const fn max_wait(&self) -> Option<Duration> {
        self.max_wait
    }

    /// The whole-call deadline, from admission (`deadline = "…"`): waiting
    /// and every attempt must end within it, else the call returns
    /// `Error::DeadlineExceeded`. A [`herta::deadline`](crate::deadline)
    /// scope around the call also applies; the earliest wins.
    pub const fn deadline(&self) -> Option<Duration> {
        self.deadline
    }

    /// Whether a failed attempt with `outcome` is retried, attempts left
    /// permitting: `outcome` is listed in `retry(on = …)` **and** the
    /// effect × outcome table allows it (checked again here at run time, belt
    /// and braces, although the macro already refuses unsafe contracts).
    /// `Throttled` is retried only with a [`backoff`](Contract::backoff).
    pub fn retries(&self, outcome: Outcome) -> bool {
        self.retry_on.contains(&outcome)
            && (herta_contract::retry_verdict(self.effect, outcome).is_allowed()
                || (outcome == Outcome::Throttled && self.backoff.is_some()))
    }

    /// The delay between attempts, declared with
    /// `retry(…, backoff(base = "10ms", cap = "1s", jitter = Full))`;
    /// `None`: attempts follow each other at once (each passing through
    /// the scheduler).
    pub const fn backoff(&self) -> Option<Backoff> {
        self.backoff
    }

    /// The circuit breaker its attempts count in and that refuses its
    /// calls while open, declared with `breaker = PAYMENTS` (or
    /// `breaker = "payments"`); checked at bind.
    pub const fn breaker(&self) -> Option<&'static str> {
        self.breaker
    }

    /// The constant the contract named its breaker by, as written
    /// (`Some("PAYMENTS")` for `breaker = PAYMENTS`); `None` when it named
    /// the breaker by a string, or names none.
    pub const fn breaker_constant(&self) -> Option<&'static str> {
        self.breaker_constant
    }
}

/// A contract, field by field: what `#[herta::operation]` and
/// `#[herta::contract]` write as `CONTRACT` (through `herta::__private`), by name, so the generated code and [`Contract`] cannot
/// disagree on the order of its parts.
#[derive(Debug, Clone, Copy)]
pub struct ContractFields {
    /// The operation's name.
    pub operation: &'static str,
    /// The declared effect.
    pub effect: Effect,
    /// The admission mode.
    pub admission: Admission,
    /// The budgets one call holds.
    pub resources: &'static [ResourceUse],
    /// The outcomes retried (empty: no retry).
    pub retry_on: &'static [Outcome],
    /// The most attempts, the first included (1: no retry).
    pub max_attempts: u32,
    /// The per-attempt timeout.
    pub timeout: Option<Duration>,
    /// The serialization key, if any.
    pub serialize_by: Option<KeySpec>,
    /// The delay between attempts, if declared.
    pub backoff: Option<Backoff>,
    /// The longest wait for key and budgets together, from admission.
    pub max_wait: Option<Duration>,
    /// The whole-call deadline, from admission.
    pub deadline: Option<Duration>,
    /// The circuit breaker's name, if any.
    pub breaker: Option<&'static str>,
    /// The constant that named the breaker, as written, if a constant did.
    pub breaker_constant: Option<&'static str>,
}

impl ContractFields {
    /// The [`Contract`] these fields declare.
    pub const fn into_contract(self) -> Contract {
        Contract::from_fields(self)
    }
}

/// One budget a contract uses: a resource name and the units one call holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceUse {
    resource: &'static str,
    units: u32,
    constant: Option<&'static str>,
}

impl ResourceUse {
    #[doc(hidden)]
    pub const fn __new(resource: &'static str, units: u32, constant: Option<&'static str>) -> Self {
        ResourceUse {
            resource,
            units,
            constant,
        }
    }

    /// The resource's name, as declared with [`Resource::new`](crate::Resource::new).
    pub const fn resource(&self) -> &'static str {
        self.resource
    }

    /// How many units of it one call holds (at least 1).
    pub const fn units(&self) -> u32 {
        self.units
    }

    /// The constant the contract named the resource by, as written
    /// (`Some("UP_RATE")` for `resources(UP_RATE = 1)`); `None` when it
    /// named the resource by a string.
    pub const fn constant(&self) -> Option<&'static str> {
        self.constant
    }
}

/// How calls are serialized: by which parameter, in which key space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpec {
    parameter: &'static str,
    scope: Option<&'static str>,
    show_key: bool,
}

impl KeySpec {
    #[doc(hidden)]
    pub const fn __new(
        parameter: &'static str,
        scope: Option<&'static str>,
        show_key: bool,
    ) -> Self {
        KeySpec {
            parameter,
            scope,
            show_key,
        }
    }

    /// Whether errors and traces may show the key's value
    /// (`serialize_by(email, show_key = true)`). By default they name the
    /// parameter only: keys are often personal data (an e-mail, a customer
    /// id), and error messages travel to logs and clients.
    pub const fn shows_key(&self) -> bool {
        self.show_key
    }

    /// The parameter whose value is the key.
    pub const fn parameter(&self) -> &'static str {
        self.parameter
    }

    /// The shared key space (`serialize_by(brand, scope = "catalogue")`);
    /// `None` means the operation's own key space.
    pub const fn scope(&self) -> Option<&'static str> {
        self.scope
    }
}

/// A type that stands for a contract: what `#[herta::contract(...)]`
/// implements on the unit struct it is written on.
///
/// A contract without a handler: the same keys and compile-time rules as
/// `#[herta::operation]`, for code that runs under a contract but is not an
/// `async fn` of yours — a `tower::Service` wrapped by
/// [`herta::tower::ContractLayer`](crate::tower) (feature `tower`). Its
/// `serialize_by` names the key, which the layer computes from each
/// request (see the [contract rules](crate::contract_rules)).
///
/// ```
/// use herta::{DeclaredContract, Effect, Outcome};
///
/// /// Calls the upstream pricing API.
/// #[herta::contract(effect = Idempotent, resources("upstream" = 1),
///                   retry(on = Transient, max = 3), timeout = "2s")]
/// pub struct CallUpstream;
///
/// assert_eq!(CallUpstream::CONTRACT.operation(), "CallUpstream");
/// assert_eq!(<CallUpstream as DeclaredContract>::CONTRACT.effect(), Effect::Idempotent);
/// assert_eq!(CallUpstream::CONTRACT.retry_on(), &[Outcome::Transient]);
/// ```
pub trait DeclaredContract: ContractParts + Send + Sync + 'static {
    /// The declared policy.
    const CONTRACT: Contract;
}

/// What `#[herta::contract]` says about a contract beyond its [`Contract`]
/// value, as types (implemented by the generated code), so that the tower layer's bounds can check it: whether
/// it declares `serialize_by` ([`Keyed`] or [`Unkeyed`]) and whether it
/// retries ([`Retried`] or [`OneAttempt`]).
pub trait ContractParts {
    /// [`Keyed`] or [`Unkeyed`].
    type Keying;
    /// [`Retried`] or [`OneAttempt`].
    type Requests;
    /// The breaker stage of its calls: `NoBreaker` or `WithBreaker`
    /// (whether it declares `breaker = …`; the tower layer's bounds ask
    /// for `BreakerUse`).
    type Breaker;
}

/// A contract that declares `serialize_by`.
#[derive(Debug)]
pub enum Keyed {}

/// A contract without `serialize_by`.
#[derive(Debug)]
pub enum Unkeyed {}

/// A contract that retries: every attempt gets its own request.
#[derive(Debug)]
pub enum Retried {}

/// A contract that makes one attempt.
#[derive(Debug)]
pub enum OneAttempt {}
