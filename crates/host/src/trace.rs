//! Chrome/Perfetto trace of what every CPU ran (JSON "complete" events, one track per CPU).
//! Contiguous segments with the same label and state are merged; the trace stops growing at
//! `MAX_EVENTS` and says so in its metadata.

use crate::types::{CpuState, STATE_NAMES};
use hostsim_engine::Time;
use std::collections::BTreeMap;

const MAX_EVENTS: usize = 2_000_000;

pub struct Trace {
    events: Vec<(u32, u64, u64, u8, u32)>,
    open: Vec<Option<usize>>,
    labels: Vec<String>,
    ids: BTreeMap<String, u32>,
    pub truncated: bool,
}

impl Trace {
    pub fn new(ncpu: usize) -> Trace {
        Trace { events: Vec::new(), open: vec![None; ncpu], labels: Vec::new(), ids: BTreeMap::new(), truncated: false }
    }

    pub fn segment(&mut self, cpu: usize, start: Time, end: Time, state: CpuState, label: String) {
        let id = match self.ids.get(&label) {
            Some(&id) => id,
            None => {
                let id = self.labels.len() as u32;
                self.labels.push(label.clone());
                self.ids.insert(label, id);
                id
            }
        };
        if let Some(i) = self.open[cpu] {
            let e = &mut self.events[i];
            if e.2 == start.ns() && e.3 == state as u8 && e.4 == id {
                e.2 = end.ns();
                return;
            }
        }
        if self.events.len() >= MAX_EVENTS {
            self.truncated = true;
            return;
        }
        self.events.push((cpu as u32, start.ns(), end.ns(), state as u8, id));
        self.open[cpu] = Some(self.events.len() - 1);
    }

    /// The trace as Chrome trace-event JSON (open in ui.perfetto.dev or chrome://tracing).
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(self.events.len() + self.open.len() + 1);
        out.push(serde_json::json!({"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "host"}}));
        for cpu in 0..self.open.len() {
            out.push(serde_json::json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": cpu,
                "args": {"name": format!("cpu{cpu}")}}));
        }
        for &(cpu, s, e, st, id) in &self.events {
            out.push(serde_json::json!({
                "name": self.labels[id as usize], "cat": STATE_NAMES[st as usize], "ph": "X",
                "ts": s as f64 / 1000.0, "dur": (e - s) as f64 / 1000.0, "pid": 1, "tid": cpu,
            }));
        }
        serde_json::json!({"traceEvents": out, "displayTimeUnit": "ns",
            "otherData": {"truncated": self.truncated}})
        .to_string()
    }
}
