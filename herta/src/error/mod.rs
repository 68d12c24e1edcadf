//! What went wrong, one file per reader: [`Error`], [`Busy`] and
//! [`Throttle`] for calls (`call`, `busy`, `throttle`), [`BindError`] for `bind`, [`ConfigError`] for building a
//! [`Runtime`](crate::Runtime), [`ResizeError`] for live capacity.

mod bind;
mod busy;
mod call;
mod config;
mod resize;
mod throttle;

pub use bind::BindError;
pub use busy::Busy;
pub use call::{Error, ErrorSource, NoSource, SourceIsError, SourceIsInner, SourceOf};
pub use config::ConfigError;
pub use resize::ResizeError;
pub use throttle::Throttle;
