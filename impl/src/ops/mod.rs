//! Operator requests to a live session (spec/mirror.md M17): the request file `<name>.ops` that
//! an operator command writes beside a mirror whose lock the daemon holds, the requests in it,
//! and the mirror's window of the requests it applied, which is each request's answer.
//!
//! The daemon's side is in the queue: at open and at each boundary it applies the requests its
//! window does not hold, each as one record that makes the change and names the request. The
//! command's side is here: [`submit`] adds a request under the request file's own lock, and
//! [`answer`] finds a request's answer in the mirror, made durable before it is returned.

mod client;
pub(crate) mod request;

pub use crate::io::input::read_whole as read_input;
pub use client::*;
pub use request::*;
