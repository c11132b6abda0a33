#!/usr/bin/env python3
"""The content of a hostsim trace, whatever its format: what every CPU ran, and when.

    python3 scripts/trace_slices.py RUN_DIR                  # print a summary of RUN_DIR's trace
    python3 scripts/trace_slices.py --compare OLD_DIR NEW_DIR  # same timeline? (exit 1 if not)

Reads `trace.perfetto-trace` (Perfetto protobuf, decoded here with a minimal reader of the few
fields hostsim writes; the test suite checks the same files with Perfetto's own schema) or
`trace.json` (Chrome JSON: flat segments as hostsim wrote before issue 12, or the nested unit
slices `--trace-format json` writes now). Since issue 12 a slice is one unit run and slices nest
like the CPU's contexts; before, the trace held flat, merged segments of whatever ran on top. To
compare the two, both are reduced to the same *timeline*: per CPU, the segments during which the
innermost open slice had the same (name, category), consecutive equal segments merged. Equal
timelines mean the traces show the same execution. Standard library only.
"""

import json
import os
import sys


def _varint(b, i):
    x = 0
    shift = 0
    while True:
        c = b[i]
        i += 1
        x |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return x, i


def _fields(b):
    """(field number, wire type, value) of one protobuf message; value is int or bytes."""
    i = 0
    while i < len(b):
        tag, i = _varint(b, i)
        f, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 2:
            n, i = _varint(b, i)
            v = b[i : i + n]
            i += n
        elif wt == 1:
            v = int.from_bytes(b[i : i + 8], "little")
            i += 8
        elif wt == 5:
            v = int.from_bytes(b[i : i + 4], "little")
            i += 4
        else:
            raise ValueError(f"wire type {wt}")
        yield f, wt, v


def slices_from_perfetto(path):
    """TracePacket (Trace.packet = 1): timestamp 8, track_event 11, interned_data 12,
    track_descriptor 60. TrackEvent: type 9, track_uuid 11, name_iid 10, category_iids 3.
    InternedData: event_categories 1, event_names 2 (iid 1, name 2).
    TrackDescriptor: uuid 1, name 2."""
    with open(path, "rb") as f:
        data = f.read()
    names, cats, tracks = {}, {}, {}
    events = []  # (track, kind, ts, name, cat) in file order
    for f, _, packet in _fields(data):
        if f != 1:
            continue
        ts = None
        ev = None
        for pf, _, pv in _fields(packet):
            if pf == 8:
                ts = pv
            elif pf == 11:
                ev = pv
            elif pf == 12:
                for kf, _, kv in _fields(pv):
                    if kf in (1, 2):
                        d = dict((x, y) for x, _, y in _fields(kv))
                        (cats if kf == 1 else names)[d[1]] = d[2].decode()
            elif pf == 60:
                d = dict((x, y) for x, _, y in _fields(pv))
                tracks[d[1]] = d.get(2, b"").decode()
        if ev is None:
            continue
        d = {}
        for ef, _, evv in _fields(ev):
            d.setdefault(ef, evv)
        track = tracks.get(d.get(11), str(d.get(11)))
        if d.get(9) == 1:  # TYPE_SLICE_BEGIN
            events.append((track, "B", ts, names.get(d.get(10)), cats.get(d.get(3))))
        elif d.get(9) == 2:  # TYPE_SLICE_END
            events.append((track, "E", ts, None, None))
    return events


def slices_from_json(path):
    """Begin/end events from complete ("X") events, nested or flat."""
    with open(path) as f:
        t = json.load(f)
    threads = {
        e["tid"]: e["args"]["name"] for e in t["traceEvents"] if e.get("ph") == "M" and e["name"] == "thread_name"
    }
    keyed = []
    for e in t["traceEvents"]:
        if e.get("ph") != "X":
            continue
        start = round(e["ts"] * 1000)
        end = start + round(e["dur"] * 1000)
        if end == start:
            continue  # shows nothing on a timeline
        track = threads.get(e["tid"], str(e["tid"]))
        # Ends before begins at the same instant; inner ends first, outer begins first.
        keyed.append(((track, start, 1, -end), (track, "B", start, e["name"], e["cat"])))
        keyed.append(((track, end, 0, -start), (track, "E", end, None, None)))
    keyed.sort(key=lambda k: k[0])
    return [ev for _, ev in keyed]


def events(run_dir):
    p = os.path.join(run_dir, "trace.perfetto-trace")
    if os.path.exists(p):
        return slices_from_perfetto(p)
    return slices_from_json(os.path.join(run_dir, "trace.json"))


def timeline(evs):
    """Per track, merged segments (track, name, cat, start, end) of the innermost open slice."""
    stacks, last, segs = {}, {}, {}
    for track, kind, ts, name, cat in evs:
        st = stacks.setdefault(track, [])
        if st and ts > last[track]:
            top = st[-1]
            out = segs.setdefault(track, [])
            if out and out[-1][1] == top[0] and out[-1][2] == top[1] and out[-1][4] == last[track]:
                out[-1] = (track, top[0], top[1], out[-1][3], ts)
            else:
                out.append((track, top[0], top[1], last[track], ts))
        last[track] = ts
        if kind == "B":
            st.append((name, cat))
        else:
            st.pop()
    return sorted(x for v in segs.values() for x in v)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        a, b = timeline(events(sys.argv[2])), timeline(events(sys.argv[3]))
        name = os.path.basename(os.path.normpath(sys.argv[3]))
        if a == b:
            print(f"same   {name}/trace (timeline of {len(a)} segments)")
            return 0
        diff = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        print(
            f"DIFFER {name}/trace: {len(a)} vs {len(b)} segments; first difference at #{diff}: "
            f"{a[diff] if diff < len(a) else None} vs {b[diff] if diff < len(b) else None}"
        )
        return 1
    if len(sys.argv) == 2:
        ev = events(sys.argv[1])
        begins = sum(1 for e in ev if e[1] == "B")
        print(f"{begins} slices on {len(set(e[0] for e in ev))} tracks; timeline of {len(timeline(ev))} segments")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
