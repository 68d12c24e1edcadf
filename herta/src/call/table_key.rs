//! Key type erasure: what the key table needs of a key type `K` (hashing,
//! equality, cloning), stored by `bind` as function pointers, so that the
//! call path compiles for any `K` and only `bind` needs the key bounds.

use std::hash::{Hash, Hasher};

/// What the key table needs of a key type, monomorphized by `bind` where
/// the key bounds are known.
pub(crate) struct KeyOps<K> {
    /// Feeds the key to a hasher.
    pub(crate) hash: fn(&K, &mut dyn Hasher),
    /// Key equality.
    pub(crate) eq: fn(&K, &K) -> bool,
    /// An owned copy of the key.
    pub(crate) clone: fn(&K) -> K,
}

impl<K: Clone + Hash + Eq + 'static> KeyOps<K> {
    /// `K`'s own `Hash`, `Eq` and `Clone`.
    pub(crate) const OPS: &'static KeyOps<K> = &KeyOps {
        hash: |key, mut state| key.hash(&mut state),
        eq: |a, b| a == b,
        clone: K::clone,
    };
}

/// A key as the key table stores it: `Hash + Eq` for any `K`, through the
/// operations `bind` stored. One pointer larger than the key; no allocation.
pub(crate) struct TableKey<K: 'static> {
    /// The call's key.
    pub(crate) key: K,
    /// How to hash and compare it.
    pub(crate) ops: &'static KeyOps<K>,
}

impl<K: 'static> Hash for TableKey<K> {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.ops.hash)(&self.key, state);
    }
}

impl<K: 'static> PartialEq for TableKey<K> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        (self.ops.eq)(&self.key, &other.key)
    }
}

impl<K: 'static> Eq for TableKey<K> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn table_keys_hash_and_compare_as_their_keys() {
        let ops = KeyOps::<String>::OPS;
        let key = |s: &str| TableKey {
            key: s.to_owned(),
            ops,
        };
        let state = std::hash::RandomState::new();
        assert!(key("acme") == key("acme"));
        assert!(key("acme") != key("zeta"));
        assert_eq!(state.hash_one(key("acme")), state.hash_one(key("acme")));
        assert_eq!((ops.clone)(&"acme".to_owned()), "acme");
    }
}
