//! How a keyed operator gets each record's key: Flink's `KeySelector`.
//!
//! Any `Fn(&T) -> K` is one (`key_by`'s closure). [`KeyByRef`] is the one
//! `key_by_ref` makes from a closure that borrows the key from the record:
//! its [`KeySelector::key_into`] sets a key the operator already holds with
//! `clone_from`, so that for a key whose clone allocates
//! (`KeyHash::CLONE_ALLOCATES`: a `String`) the keyed operator moves one
//! key from record to record and reuses its allocation (no allocation and
//! free per record for the context's copy of it).

use weir_state::KeyHash;

/// The key of each record of type `T`.
pub trait KeySelector<T>: Clone + Send + Sync + 'static {
    /// The key.
    type Key;

    /// Whether [`key_into`](Self::key_into) reuses the key it sets: a
    /// keyed operator then keeps one key context for a run of records
    /// rather than making one per record.
    const REUSES_KEY: bool = false;

    /// The key of `record`, owned.
    fn key(&self, record: &T) -> Self::Key;

    /// Sets `into` to the key of `record`, reusing what `into` holds where
    /// the key type can (`Clone::clone_from`). The default replaces it.
    #[inline(always)]
    fn key_into(&self, record: &T, into: &mut Self::Key) {
        *into = self.key(record);
    }
}

impl<T, K, F> KeySelector<T> for F
where
    F: Fn(&T) -> K + Clone + Send + Sync + 'static,
{
    type Key = K;

    #[inline(always)]
    fn key(&self, record: &T) -> K {
        self(record)
    }
}

/// A key the record holds, selected by reference (`|e: &Event| &e.user`):
/// cloned for the operator, or cloned into the key it holds.
#[derive(Clone, Copy)]
pub struct KeyByRef<F>(pub(crate) F);

impl<T, K, F> KeySelector<T> for KeyByRef<F>
where
    K: Clone + KeyHash,
    F: for<'a> Fn(&'a T) -> &'a K + Clone + Send + Sync + 'static,
{
    type Key = K;

    /// Only where a clone allocates ([`KeyHash::CLONE_ALLOCATES`]).
    const REUSES_KEY: bool = K::CLONE_ALLOCATES;

    #[inline(always)]
    fn key(&self, record: &T) -> K {
        (self.0)(record).clone()
    }

    #[inline(always)]
    fn key_into(&self, record: &T, into: &mut K) {
        into.clone_from((self.0)(record));
    }
}

#[cfg(test)]
mod tests {
    use super::{KeyByRef, KeySelector};

    fn user(e: &(String, u64)) -> &String {
        &e.0
    }

    #[test]
    fn a_closure_and_a_reference_select_the_same_key() {
        let by_value = |e: &(String, u64)| e.0.clone();
        let by_ref = KeyByRef(user);
        let a = ("user-7".to_owned(), 1);
        let b = ("a-much-longer-user-id-than-the-first".to_owned(), 2);
        assert_eq!(by_value.key(&a), by_ref.key(&a));
        let (mut k1, mut k2) = (by_value.key(&b), by_ref.key(&b));
        by_value.key_into(&a, &mut k1);
        by_ref.key_into(&a, &mut k2);
        assert_eq!((k1.as_str(), k2.as_str()), ("user-7", "user-7"));
        by_ref.key_into(&b, &mut k2);
        assert_eq!(k2, b.0);
    }

    #[test]
    fn a_reused_key_keeps_its_allocation() {
        let by_ref = KeyByRef(user);
        let mut key = by_ref.key(&("user-123456".to_owned(), 0));
        let at = key.as_ptr();
        by_ref.key_into(&("user-9".to_owned(), 0), &mut key);
        assert_eq!(key, "user-9");
        assert_eq!(
            key.as_ptr(),
            at,
            "clone_from into a large enough String reuses it"
        );
    }
}
