// franz-go peer for the kconsume benchmark (perf/run). Reads a topic from its beginning to the
// end offsets listed at start, touching every record's value (its bytes are summed so nothing
// can skip decoding), and prints one JSON line like the other peers.
//
// Modes: "group" (ConsumerGroup + ConsumeTopics, the usual deployment) and "direct" (every
// partition assigned by the client, no group). With -latency it instead reads N records of a
// topic being produced and reports produce->poll latency (p50/p99/p99.9) from the record
// timestamps, with a 10 ms fetch max wait, or with -defaults franz-go's own fetch settings;
// -warmup W leaves the first W records (the producer's warm-up) out of the percentiles.
//
// Threads: franz-go runs one fetch source goroutine per broker; this program's single goroutine
// polls, so the per-record work happens on it, like rd_kafka_consumer_poll in the C peer.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type result struct {
	Client     string  `json:"client"`
	Mode       string  `json:"mode"`
	Topic      string  `json:"topic"`
	Records    int64   `json:"records"`
	Bytes      int64   `json:"bytes"`
	ValueSum   uint64  `json:"value_sum"`
	WallS      float64 `json:"wall_s"`
	Polls      int64   `json:"polls"`
	Fetches    int64   `json:"fetch_requests"`
	FetchB     int64   `json:"fetch_request_bytes"`
	FetchMin   int64   `json:"fetch_request_bytes_min"`
	FetchMax   int64   `json:"fetch_request_bytes_max"`
	LatP50ms   float64 `json:"lat_p50_ms,omitempty"`
	LatP99ms   float64 `json:"lat_p99_ms,omitempty"`
	LatP999ms  float64 `json:"lat_p999_ms,omitempty"`
	LatRecords int     `json:"lat_records,omitempty"`
}

// fetchCounter counts Fetch requests (key 1) and the bytes written for them, from the client's
// broker-write hook: exact, and needs no capture. Called from the per-broker goroutines.
// Smallest and largest request too: with fetch sessions the smallest is an incremental fetch
// that names no partition, the largest the one that opened the session with all of them.
type fetchCounter struct {
	mu               sync.Mutex
	n, bytes, lo, hi int64
}

func (c *fetchCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, written int, _, _ time.Duration, err error) {
	if key != 1 || err != nil {
		return
	}
	w := int64(written)
	c.mu.Lock()
	c.n++
	c.bytes += w
	if c.lo == 0 || w < c.lo {
		c.lo = w
	}
	if w > c.hi {
		c.hi = w
	}
	c.mu.Unlock()
}

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "franzgo_consume: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	brokers := flag.String("b", "127.0.0.1:18092", "bootstrap brokers, comma separated")
	topic := flag.String("t", "", "topic")
	mode := flag.String("mode", "group", "group | direct")
	group := flag.String("group", "", "group id (group mode; default a fresh one)")
	latency := flag.Bool("latency", false, "latency mode: read -records records as they are produced")
	want := flag.Int64("records", 0, "latency mode: records to read")
	defaults := flag.Bool("defaults", false, "latency mode: franz-go's own fetch settings (else a 10 ms max wait)")
	warmup := flag.Int("warmup", 0, "latency mode: the first this many records are not in the percentiles")
	flag.Parse()
	if *topic == "" || (*mode != "group" && *mode != "direct") {
		die("usage: -b BROKERS -t TOPIC [-mode group|direct] [-latency -records N [-defaults] [-warmup W]]")
	}
	seeds := strings.Split(*brokers, ",")

	// End offsets first, outside the timed region: franz-go has no partition-EOF event, so the
	// stop condition is "every partition reached the end offset it had when we started".
	ends := map[int32]int64{}
	if !*latency {
		adm, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
		if err != nil {
			die("admin client: %v", err)
		}
		listed, err := kadm.NewClient(adm).ListEndOffsets(context.Background(), *topic)
		if err != nil {
			die("list end offsets: %v", err)
		}
		listed.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				die("end offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
			}
			if o.Offset > 0 {
				ends[o.Partition] = o.Offset
			}
		})
		adm.Close()
	}

	var fc fetchCounter
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.WithHooks(&fc),
		kgo.ConsumeTopics(*topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	switch {
	case !*latency:
		// Throughput settings (perf/README.md): up to 50 MiB per fetch response and 8 MiB per
		// partition so one response carries many batches of every partition; 500 ms max wait
		// only matters at the tail.
		opts = append(opts, kgo.FetchMaxBytes(50<<20), kgo.FetchMaxPartitionBytes(8<<20),
			kgo.FetchMaxWait(500*time.Millisecond))
	case !*defaults:
		// Latency, low-latency settings: answer as soon as anything is there (min bytes is 1).
		opts = append(opts, kgo.FetchMaxWait(10*time.Millisecond))
	}
	if *mode == "group" {
		g := *group
		if g == "" {
			g = fmt.Sprintf("perf-franzgo-%d", time.Now().UnixNano())
		}
		// No commits: the benchmark measures fetch and decode; all peers run without them.
		opts = append(opts, kgo.ConsumerGroup(g), kgo.DisableAutoCommit())
	}

	start := time.Now()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		die("client: %v", err)
	}
	res := result{Client: "franz-go", Mode: *mode, Topic: *topic}
	var lats []int64 // microseconds, one per record: preallocated as the other peers do
	if *latency {
		lats = make([]int64, 0, *want)
	}
	remaining := len(ends)
	ctx := context.Background()
	for (*latency && res.Records < *want) || (!*latency && remaining > 0) {
		fs := cl.PollFetches(ctx)
		res.Polls++
		if errs := fs.Errors(); len(errs) > 0 {
			die("fetch: %v", errs[0].Err)
		}
		var now time.Time
		if *latency {
			now = time.Now()
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				res.ValueSum += valueSum(r.Value)
				res.Bytes += int64(len(r.Value))
				res.Records++
				if *latency {
					lats = append(lats, now.Sub(r.Timestamp).Microseconds())
				}
			}
			if n := len(p.Records); n > 0 && !*latency {
				last := p.Records[n-1].Offset
				if end, ok := ends[p.Partition]; ok && last+1 >= end {
					delete(ends, p.Partition)
					remaining--
				}
			}
		})
	}
	res.WallS = time.Since(start).Seconds()
	if *warmup < 0 || *warmup >= len(lats) {
		lats = nil // no percentiles: the warm-up is all there is
	} else {
		lats = lats[*warmup:] // in delivery order: the producer's warm-up
	}
	if len(lats) > 0 {
		res.LatRecords = len(lats)
		sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
		ms := func(us int64) float64 { return math.Round(float64(us)/10) / 100 }
		res.LatP50ms = ms(lats[len(lats)/2])
		res.LatP99ms = ms(lats[len(lats)*99/100])
		res.LatP999ms = ms(lats[len(lats)*999/1000])
	}
	fc.mu.Lock()
	res.Fetches, res.FetchB, res.FetchMin, res.FetchMax = fc.n, fc.bytes, fc.lo, fc.hi
	fc.mu.Unlock()
	cl.Close()
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

// valueSum is the benchmark's per-record work, the same function as perf_value_sum in
// perf/peers/touch.h (the C peers): the sum of every byte, read eight bytes at a time as four
// 16-bit lanes of even and odd bytes (at most 510 per word; 128 words cannot carry between
// lanes), folded at the end. Same result as a byte loop; why words: perf/README.md.
func valueSum(v []byte) uint64 {
	const even, lo16 = 0x00ff00ff00ff00ff, 0x0000ffff0000ffff
	var total uint64
	for len(v) >= 8 {
		var acc uint64
		for k := 0; k < 128 && len(v) >= 8; k++ {
			w := binary.LittleEndian.Uint64(v)
			acc += (w & even) + ((w >> 8) & even)
			v = v[8:]
		}
		acc = (acc & lo16) + ((acc >> 16) & lo16)
		total += (acc & 0xffffffff) + (acc >> 32)
	}
	for _, c := range v {
		total += uint64(c)
	}
	return total
}
