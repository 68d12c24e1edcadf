//! trybuild cases live in ui-tests/.
