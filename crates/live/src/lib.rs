//! hostsim-live (work in progress)
pub mod agent;
pub mod netns;
pub mod ozaki;
pub mod procfs;
pub mod sys;
pub mod worker;
pub mod xdp;
