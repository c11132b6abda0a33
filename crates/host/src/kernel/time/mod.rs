//! Timers (Linux `kernel/time/`; 2.4/2.5 `kernel/timer.c`).
//!
//! - `jiffies`: the tick and time counted in ticks;
//! - `nanosleep`: how long a sleep really lasts (tick-quantised as 2.4/2.5, or exact).

pub mod jiffies;
pub mod nanosleep;
