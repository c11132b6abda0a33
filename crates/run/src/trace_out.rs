//! Trace files: the model's slices (`hostsim_host::TraceSink`) streamed to disk as they come.
//!
//! - [`PerfettoWriter`]: Perfetto's native protobuf trace (`trace.perfetto-trace`), the format
//!   the Perfetto UI and `trace_processor` load fastest. Messages are encoded with `prost`; the
//!   few message types used are declared below with the field numbers of Perfetto's
//!   `protos/perfetto/trace/trace_packet.proto`, `track_event/track_event.proto`,
//!   `track_event/track_descriptor.proto` and `interned_data/interned_data.proto` (checked in
//!   `python/tests/test_trace.py` against the schema shipped in the `perfetto` package on PyPI).
//!   One track per CPU, under one process track "host"; event names and categories are interned
//!   once in the first packet, so a slice costs two small packets (~40 bytes).
//! - [`JsonWriter`]: Chrome trace-event JSON (`trace.json`, "X" complete events, written when a
//!   slice ends), for tools that want JSON; larger and slower to load.
//!
//! Both write through a caller-given `io::Write` (a `BufWriter<File>` for `hostsim run`) and keep
//! only O(CPUs) state, so memory stays flat however long the run. An I/O error is kept and
//! reported by `finish`.

use hostsim_host::TraceSink;
use prost::Message;
use std::io::{self, Write};

// ----- the subset of Perfetto's trace protos that hostsim writes -----

/// `perfetto.protos.TracePacket`.
#[derive(Clone, PartialEq, Message)]
struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "10")]
    trusted_packet_sequence_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    track_event: Option<TrackEvent>,
    #[prost(message, optional, tag = "12")]
    interned_data: Option<InternedData>,
    /// `SequenceFlags`: SEQ_INCREMENTAL_STATE_CLEARED = 1, SEQ_NEEDS_INCREMENTAL_STATE = 2.
    #[prost(uint32, optional, tag = "13")]
    sequence_flags: Option<u32>,
    #[prost(message, optional, tag = "60")]
    track_descriptor: Option<TrackDescriptor>,
}

/// `perfetto.protos.TrackEvent`.
#[derive(Clone, PartialEq, Message)]
struct TrackEvent {
    #[prost(uint64, repeated, packed = "false", tag = "3")]
    category_iids: Vec<u64>,
    /// `Type`: TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2.
    #[prost(int32, optional, tag = "9")]
    r#type: Option<i32>,
    #[prost(uint64, optional, tag = "10")]
    name_iid: Option<u64>,
    #[prost(uint64, optional, tag = "11")]
    track_uuid: Option<u64>,
}

/// `perfetto.protos.TrackDescriptor`.
#[derive(Clone, PartialEq, Message)]
struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    name: Option<String>,
    #[prost(message, optional, tag = "3")]
    process: Option<ProcessDescriptor>,
    #[prost(uint64, optional, tag = "5")]
    parent_uuid: Option<u64>,
}

/// `perfetto.protos.ProcessDescriptor`.
#[derive(Clone, PartialEq, Message)]
struct ProcessDescriptor {
    #[prost(int32, optional, tag = "1")]
    pid: Option<i32>,
    #[prost(string, optional, tag = "6")]
    process_name: Option<String>,
}

/// `perfetto.protos.InternedData`.
#[derive(Clone, PartialEq, Message)]
struct InternedData {
    #[prost(message, repeated, tag = "1")]
    event_categories: Vec<InternedString>,
    #[prost(message, repeated, tag = "2")]
    event_names: Vec<InternedString>,
}

/// `EventCategory` / `EventName`: both are `{ uint64 iid = 1; string name = 2; }`.
#[derive(Clone, PartialEq, Message)]
struct InternedString {
    #[prost(uint64, optional, tag = "1")]
    iid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    name: Option<String>,
}

const SEQ_ID: u32 = 1;
const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;
const TYPE_SLICE_BEGIN: i32 = 1;
const TYPE_SLICE_END: i32 = 2;
/// Track uuids: the process track, then CPU c's track.
const PROCESS_UUID: u64 = 1;
fn cpu_uuid(cpu: u32) -> u64 {
    100 + u64::from(cpu)
}

/// Streams Perfetto protobuf: a `Trace` is a sequence of `packet` fields (field 1, length
/// delimited), so packets can be appended one by one.
pub struct PerfettoWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    error: Option<io::Error>,
    slices: u64,
}

impl<W: Write> PerfettoWriter<W> {
    pub fn new(out: W) -> Self {
        PerfettoWriter { out, buf: Vec::with_capacity(64), error: None, slices: 0 }
    }

    fn packet(&mut self, p: &TracePacket) {
        if self.error.is_some() {
            return;
        }
        self.buf.clear();
        // Trace.packet = 1, wire type 2 (length-delimited).
        prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, &mut self.buf);
        p.encode_length_delimited(&mut self.buf).expect("a Vec grows as needed");
        if let Err(e) = self.out.write_all(&self.buf) {
            self.error = Some(e);
        }
    }

    /// Flush and return the writer (or the first I/O error) and the number of slices written.
    pub fn finish(mut self) -> io::Result<(W, u64)> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok((self.out, self.slices))
    }
}

impl<W: Write> TraceSink for PerfettoWriter<W> {
    fn start(&mut self, ncpu: usize, labels: &[String], states: &[&str]) {
        let process = TrackDescriptor {
            uuid: Some(PROCESS_UUID),
            name: None,
            process: Some(ProcessDescriptor { pid: Some(1), process_name: Some("host".into()) }),
            parent_uuid: None,
        };
        self.packet(&TracePacket { track_descriptor: Some(process), ..Default::default() });
        for cpu in 0..ncpu as u32 {
            let t = TrackDescriptor {
                uuid: Some(cpu_uuid(cpu)),
                name: Some(format!("cpu{cpu}")),
                process: None,
                parent_uuid: Some(PROCESS_UUID),
            };
            self.packet(&TracePacket { track_descriptor: Some(t), ..Default::default() });
        }
        // Interned strings: iid 0 is reserved by Perfetto, so ids start at 1.
        let interned = |names: &mut dyn Iterator<Item = String>| {
            names
                .enumerate()
                .map(|(i, n)| InternedString { iid: Some(i as u64 + 1), name: Some(n) })
                .collect::<Vec<_>>()
        };
        let data = InternedData {
            event_categories: interned(&mut states.iter().map(|s| s.to_string())),
            event_names: interned(&mut labels.iter().cloned()),
        };
        self.packet(&TracePacket {
            trusted_packet_sequence_id: Some(SEQ_ID),
            interned_data: Some(data),
            sequence_flags: Some(SEQ_INCREMENTAL_STATE_CLEARED),
            ..Default::default()
        });
    }

    fn begin(&mut self, cpu: u32, ts_ns: u64, label: u32, state: u8) {
        self.slices += 1;
        self.packet(&TracePacket {
            timestamp: Some(ts_ns),
            trusted_packet_sequence_id: Some(SEQ_ID),
            track_event: Some(TrackEvent {
                category_iids: vec![u64::from(state) + 1],
                r#type: Some(TYPE_SLICE_BEGIN),
                name_iid: Some(u64::from(label) + 1),
                track_uuid: Some(cpu_uuid(cpu)),
            }),
            sequence_flags: Some(SEQ_NEEDS_INCREMENTAL_STATE),
            ..Default::default()
        });
    }

    fn end(&mut self, cpu: u32, ts_ns: u64) {
        self.packet(&TracePacket {
            timestamp: Some(ts_ns),
            trusted_packet_sequence_id: Some(SEQ_ID),
            track_event: Some(TrackEvent {
                category_iids: Vec::new(),
                r#type: Some(TYPE_SLICE_END),
                name_iid: None,
                track_uuid: Some(cpu_uuid(cpu)),
            }),
            sequence_flags: Some(SEQ_NEEDS_INCREMENTAL_STATE),
            ..Default::default()
        });
    }
}

/// Streams Chrome trace-event JSON: a metadata event per CPU, then one "X" (complete) event per
/// slice, written when it ends (a child before its parent; viewers sort by time).
pub struct JsonWriter<W: Write> {
    out: W,
    labels: Vec<String>,
    states: Vec<String>,
    /// Per CPU, the open slices' (start ns, label, state).
    open: Vec<Vec<(u64, u32, u8)>>,
    error: Option<io::Error>,
    slices: u64,
}

impl<W: Write> JsonWriter<W> {
    pub fn new(out: W) -> Self {
        JsonWriter { out, labels: Vec::new(), states: Vec::new(), open: Vec::new(), error: None, slices: 0 }
    }

    fn write(&mut self, s: &str) {
        if self.error.is_none() {
            if let Err(e) = self.out.write_all(s.as_bytes()) {
                self.error = Some(e);
            }
        }
    }

    pub fn finish(mut self) -> io::Result<(W, u64)> {
        self.write("\n],\"displayTimeUnit\":\"ns\"}\n");
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok((self.out, self.slices))
    }
}

/// Microseconds with nanosecond precision, as Chrome's format wants.
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

impl<W: Write> TraceSink for JsonWriter<W> {
    fn start(&mut self, ncpu: usize, labels: &[String], states: &[&str]) {
        self.labels = labels.iter().map(|l| serde_json::to_string(l).expect("a string serialises")).collect();
        self.states = states.iter().map(|s| serde_json::to_string(s).expect("a string serialises")).collect();
        self.open = vec![Vec::new(); ncpu];
        self.write(
            "{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"host\"}}",
        );
        for cpu in 0..ncpu {
            let line = format!(",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{cpu},\"args\":{{\"name\":\"cpu{cpu}\"}}}}");
            self.write(&line);
        }
    }

    fn begin(&mut self, cpu: u32, ts_ns: u64, label: u32, state: u8) {
        self.open[cpu as usize].push((ts_ns, label, state));
    }

    fn end(&mut self, cpu: u32, ts_ns: u64) {
        let Some((start, label, state)) = self.open[cpu as usize].pop() else { return };
        self.slices += 1;
        let line = format!(
            ",\n{{\"name\":{},\"cat\":{},\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":1,\"tid\":{cpu}}}",
            self.labels[label as usize],
            self.states[state as usize],
            us(start),
            us(ts_ns - start)
        );
        self.write(&line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(sink: &mut dyn TraceSink) {
        sink.start(2, &["tick".into(), "sink \"a\"".into()], &["hardirq", "user"]);
        sink.begin(0, 1000, 1, 1);
        sink.begin(0, 1500, 0, 0);
        sink.end(0, 1700);
        sink.end(0, 3000);
        sink.begin(1, 2000, 0, 0);
        sink.end(1, 2100);
    }

    #[test]
    fn json_is_valid_and_nested() {
        let mut w = JsonWriter::new(Vec::new());
        sample(&mut w);
        let (bytes, n) = w.finish().unwrap();
        assert_eq!(n, 3);
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let ev = v["traceEvents"].as_array().unwrap();
        let x: Vec<_> = ev.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(x.len(), 3);
        assert_eq!(x[0]["name"], "tick");
        assert_eq!(x[0]["ts"].as_f64(), Some(1.5));
        assert_eq!(x[1]["name"], "sink \"a\"");
        assert_eq!(x[1]["dur"].as_f64(), Some(2.0));
    }

    #[test]
    fn perfetto_packets_decode() {
        let mut w = PerfettoWriter::new(Vec::new());
        sample(&mut w);
        let (bytes, n) = w.finish().unwrap();
        assert_eq!(n, 3);
        // Walk the Trace: field 1 repeated, each a TracePacket.
        let mut buf = &bytes[..];
        let mut packets = Vec::new();
        while !buf.is_empty() {
            let (tag, wt) = prost::encoding::decode_key(&mut buf).unwrap();
            assert_eq!((tag, wt), (1, prost::encoding::WireType::LengthDelimited));
            packets.push(TracePacket::decode_length_delimited(&mut buf).unwrap());
        }
        // process + 2 CPU descriptors + interned data + 6 slice events
        assert_eq!(packets.len(), 10);
        let names = &packets[3].interned_data.as_ref().unwrap().event_names;
        assert_eq!(names[1].name.as_deref(), Some("sink \"a\""));
        let begins = packets
            .iter()
            .filter(|p| p.track_event.as_ref().is_some_and(|e| e.r#type == Some(TYPE_SLICE_BEGIN)))
            .count();
        assert_eq!(begins, 3);
        assert_eq!(packets[4].timestamp, Some(1000));
        assert_eq!(packets[4].track_event.as_ref().unwrap().name_iid, Some(2));
    }
}
