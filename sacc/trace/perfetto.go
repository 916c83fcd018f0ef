package trace

import (
	"bufio"
	"io"
	"strconv"
)

// WritePerfetto writes events in the Chrome trace-event JSON format, which Perfetto
// (ui.perfetto.dev) and chrome://tracing open. Each side of the machine is a thread
// of one process; every event is an instant on its side's track, timestamped in
// microseconds with nanosecond precision, with its arguments attached. Device DMA
// events also get a duration slice covering the link time given by linkBytesPerUs
// (0 leaves them as instants).
func WritePerfetto(w io.Writer, events []Event, linkBytesPerUs uint64) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(`{"displayTimeUnit":"ns","traceEvents":[`)
	bw.WriteString("\n")
	first := true
	sep := func() {
		if !first {
			bw.WriteString(",\n")
		}
		first = false
	}
	var b []byte
	for s := Side(0); s < numSides; s++ {
		sep()
		b = b[:0]
		b = append(b, `{"ph":"M","pid":1,"tid":`...)
		b = strconv.AppendUint(b, uint64(s)+1, 10)
		b = append(b, `,"name":"thread_name","args":{"name":"`...)
		b = append(b, s.String()...)
		b = append(b, `"}}`...)
		bw.Write(b)
	}
	sep()
	bw.WriteString(`{"ph":"M","pid":1,"name":"process_name","args":{"name":"saccbook machine"}}`)
	for _, ev := range events {
		info := ev.Kind.Info()
		sep()
		b = b[:0]
		b = append(b, `{"name":"`...)
		b = append(b, info.Name...)
		b = append(b, `","cat":"`...)
		b = append(b, info.Side.String()...)
		dur := uint64(0)
		if (ev.Kind == DMARead || ev.Kind == DMAWrite) && linkBytesPerUs > 0 {
			dur = (ev.Args[2]*1000 + linkBytesPerUs - 1) / linkBytesPerUs
		}
		if dur > 0 {
			b = append(b, `","ph":"X","dur":`...)
			b = appendMicros(b, dur)
		} else {
			b = append(b, `","ph":"i","s":"t`...)
			b = append(b, '"')
		}
		b = append(b, `,"ts":`...)
		b = appendMicros(b, uint64(ev.Time))
		b = append(b, `,"pid":1,"tid":`...)
		b = strconv.AppendUint(b, uint64(info.Side)+1, 10)
		b = append(b, `,"args":{"seq":`...)
		b = strconv.AppendUint(b, ev.Seq, 10)
		for i, a := range info.Args {
			b = append(b, `,"`...)
			b = append(b, a.Name...)
			b = append(b, `":`...)
			b = strconv.AppendQuote(b, string(appendValue(nil, a.Format, ev.Args[i])))
		}
		b = append(b, "}}"...)
		bw.Write(b)
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}

// appendMicros writes ns as microseconds with three decimals.
func appendMicros(b []byte, ns uint64) []byte {
	b = strconv.AppendUint(b, ns/1000, 10)
	frac := ns % 1000
	b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	return b
}
