//! File-system-side system calls (Linux `fs/`).
//!
//! - `select`: poll() (Linux `fs/select.c`): its cost over the descriptors and its blocking.

pub mod select;
