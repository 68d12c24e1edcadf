//! How the requests of a [`ContractLayer`](super::ContractLayer) are keyed:
//! [`Unkeyed`] for a contract without `serialize_by`, [`KeyedBy`] a key
//! function for one with it, and the bounds that say which a contract
//! needs ([`NoKeyDeclared`], [`KeyDeclared`]).

use crate::call::Bound;
use crate::contract;
use crate::keys::NoKey;

/// Requests of a contract without `serialize_by`: no key.
#[derive(Clone)]
pub struct Unkeyed {
    pub(super) bound: Bound<NoKey>,
}

/// Requests keyed by the function `F` (`Fn(&Req) -> K`), given to
/// [`ContractLayer::bind_keyed`](super::ContractLayer::bind_keyed).
#[derive(Clone)]
pub struct KeyedBy<F, K: 'static> {
    pub(super) bound: Bound<K>,
    pub(super) key: F,
}

/// What a service needs of its keying: the bound contract and each
/// request's key. Implemented by [`Unkeyed`] and [`KeyedBy`].
pub trait KeyOf<Req> {
    /// The key type (`NoKey` without `serialize_by`).
    #[doc(hidden)]
    type Key: Send + Sync + 'static;
    /// The contract, bound.
    #[doc(hidden)]
    fn bound(&self) -> &Bound<Self::Key>;
    /// The key of `request`.
    #[doc(hidden)]
    fn key(&self, request: &Req) -> Option<Self::Key>;
}

impl<Req> KeyOf<Req> for Unkeyed {
    type Key = NoKey;
    fn bound(&self) -> &Bound<NoKey> {
        &self.bound
    }
    fn key(&self, _: &Req) -> Option<NoKey> {
        None
    }
}

impl<Req, K: Send + Sync + 'static, F: Fn(&Req) -> K> KeyOf<Req> for KeyedBy<F, K> {
    type Key = K;
    fn bound(&self) -> &Bound<K> {
        &self.bound
    }
    fn key(&self, request: &Req) -> Option<K> {
        Some((self.key)(request))
    }
}

/// `ContractLayer::bind`'s requirement: the contract declares no key.
#[diagnostic::on_unimplemented(
    message = "this contract declares `serialize_by`, so every request needs a key",
    label = "a keyed contract",
    note = "bind it with `ContractLayer::bind_keyed(&runtime, |request: &Req| key)`, which computes each request's key"
)]
pub trait NoKeyDeclared {}
impl NoKeyDeclared for contract::Unkeyed {}

/// `ContractLayer::bind_keyed`'s requirement: the contract declares a key.
#[diagnostic::on_unimplemented(
    message = "this contract declares no `serialize_by`, so a key function would never be used",
    label = "a contract without a key",
    note = "bind it with `ContractLayer::bind(&runtime)`, or add `serialize_by = <key name>` to the contract"
)]
pub trait KeyDeclared {}
impl KeyDeclared for contract::Keyed {}
