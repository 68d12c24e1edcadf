//! [`OwnLines`]: a value alone on its cache lines, for the words every call
//! reads and something else may write.

/// A value alone on its cache lines (128 bytes: two lines, as adjacent-line
/// prefetchers fetch them in pairs), so that no write to a neighbour (a
/// field beside it, or an unrelated static the linker placed next to it)
/// evicts it from the cores that read it.
#[repr(align(128))]
pub(crate) struct OwnLines<T>(pub(crate) T);

impl<T> std::ops::Deref for OwnLines<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}
