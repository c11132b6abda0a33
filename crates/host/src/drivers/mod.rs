//! Device drivers (Linux `drivers/`): the network adapters' side of the host.

pub mod net;
