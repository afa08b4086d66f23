package mesh

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/contract"
	"github.com/custody-dev/custody/ledger"
	"github.com/custody-dev/custody/systems/peas"
)

// chainRecorder seals entries into an in-memory hash chain: the CPU cost
// of recording evidence without the disk, whose group commit amortises
// one fsync over every append waiting. Like the SQLite store, it
// prepares an entry in the caller's goroutine and only links it to the
// chain under the lock.
type chainRecorder struct {
	mu       sync.Mutex
	head     string
	seq      int64
	sealer   ledger.Sealer
	prepared sync.Pool // of *preparedEntry, as the store pools its own
}

type preparedEntry struct {
	z ledger.Canonicalizer
	p ledger.Prepared
}

func (c *chainRecorder) Commit(ctx context.Context, e custody.Entry, changes ...custody.Change) (custody.Entry, error) {
	if len(changes) > 0 {
		return custody.Entry{}, custody.Errorf(custody.EINVALID, "the chain recorder keeps no state")
	}
	return c.Append(ctx, e)
}

func (c *chainRecorder) Append(_ context.Context, e custody.Entry) (custody.Entry, error) {
	pe, _ := c.prepared.Get().(*preparedEntry)
	if pe == nil {
		pe = &preparedEntry{}
	}
	defer c.prepared.Put(pe)
	if err := pe.z.Prepare(&pe.p, &e); err != nil {
		return e, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	e.Seq = c.seq
	if err := c.sealer.SealPrepared(c.head, &e, &pe.p); err != nil {
		return e, err
	}
	c.head = e.Hash
	return e, nil
}

const benchNodes = 10000

// benchRidge is the quiet ridge of the simulator (package mesh/sim, which
// imports this one): the same node ids, positions and readings, so that
// the advisories measured here are those a quiet simulated ridge sends.
type benchRidge struct {
	Start time.Time
}

// NodeID returns the id of node i.
func (benchRidge) NodeID(i int) string { return fmt.Sprintf("forward-ridge-%d", i+1) }

// Position returns the fixture position of node i: nodes go 24 to a
// 100 km MGRS square, in a line of squares.
func (benchRidge) Position(i int) Position {
	sq := i / 24
	col, row := "ABCDEFGHJKLMNPQRSTUVWXYZ"[sq%24], "ABCDEFGHJKLMNPQRSTUV"[(sq/24)%20]
	e, n := 10000+(i%24)*1500, 50000+(i%3)*700
	lat := 34.20 + float64(i%24)*0.0135 + float64(sq/24)*0.9
	lon := -118.40 + float64(i%24)*0.003 + float64(sq%24)*1.1
	return Position{MGRS: fmt.Sprintf("11S%c%c%05d%05d", col, row, e, n), Lat: Float(round(lat, 4)), Lon: Float(round(lon, 4))}
}

// Read returns node i's quiet reading, the same at every time.
func (benchRidge) Read(i int, _ time.Time) (SensorReading, Conditions) {
	jit := float64((i*7)%5) / 10
	return SensorReading{
		ThermalMaxC: Float(round(26+jit*10, 1)), ThermalAreaM2: Float(0), ThermalAnomalyPixels: new(int),
		AmbientC: Float(round(24+jit, 1)), HumidityPct: Float(round(38-jit*4, 1)),
		WindSpeedMS: Float(round(3.5+jit, 1)), WindGustMS: Float(round(5.5+jit, 1)), WindDirDeg: Float(250),
	}, Conditions{}
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// benchMesh returns an aggregator on a loopback, the signed advisories
// of 10,000 nodes on their subjects, and how to sign another advisory of
// node i.
func benchMesh(b *testing.B, onAgg func(Aggregation, []byte, string)) (*Aggregator, *Loopback, []Msg, benchRidge, func(int, []byte) Msg) {
	b.Helper()
	reg, err := contract.Load(contract.Options{Contracts: []contract.Source{peas.Contract()}})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Date(2026, 7, 14, 13, 0, 0, 0, time.UTC)
	now := start
	clock := func() time.Time { return now }
	loop := NewLoopback(Faults{})
	rec := &chainRecorder{}
	roster, _ := NewRoster()
	wire := &Wire{Transport: loop, Validator: reg, Ledger: rec, Actor: "aggregator", Now: clock, Roster: roster}
	agg := NewAggregator(AggregatorConfig{Wire: wire, Now: clock, NodePeriod: 30 * time.Second, OnAggregation: onAgg})
	if _, err := agg.Listen(context.Background()); err != nil {
		b.Fatal(err)
	}
	w := benchRidge{Start: start}
	ids := make([]*Identity, benchNodes)
	sign := func(i int, raw []byte) Msg {
		m, err := ids[i].sign(Subjects{}.Advisory(w.NodeID(i)), raw)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	msgs := make([]Msg, benchNodes)
	for i := range benchNodes {
		if ids[i], err = NewIdentity(w.NodeID(i), RoleNode); err != nil {
			b.Fatal(err)
		}
		if err := roster.Admit(ids[i].Member); err != nil {
			b.Fatal(err)
		}
		n, err := NewNode(NodeConfig{ID: w.NodeID(i), Position: w.Position(i), Sensor: fixedSensor(w.Read(i, start))})
		if err != nil {
			b.Fatal(err)
		}
		r, c := w.Read(i, start)
		_, raw, _, err := n.Advise(context.Background(), start, r, c)
		if err != nil {
			b.Fatal(err)
		}
		msgs[i] = sign(i, raw)
	}
	return agg, loop, msgs, w, sign
}

// BenchmarkAggregatorIngest measures advisories admitted (size, contract
// with its strict JSON decoder, the numbers canonical JSON refuses, rule
// re-check, guard), recorded (the ledger canonicalizes and seals the
// body) and ingested per second with 10,000 nodes on a loopback,
// delivered in the publisher's goroutine.
func BenchmarkAggregatorIngest(b *testing.B) {
	agg, loop, msgs, _, _ := benchMesh(b, nil)
	benchIngest(b, agg, loop, msgs)
}

// BenchmarkAggregatorIngestPlain is BenchmarkAggregatorIngest with each
// advisory read after its contract check by the plain path, Wire.Check
// then encoding/json (receivePlain), instead of the reader of
// advdecode.go: the baseline that reader must beat.
func BenchmarkAggregatorIngestPlain(b *testing.B) {
	agg, _, msgs, _, _ := benchMesh(b, nil)
	loop := NewLoopback(Faults{})
	_, err := loop.Subscribe(agg.cfg.Subjects.Advisories(), func(ctx context.Context, m Msg) {
		if err := agg.receivePlain(ctx, m); err != nil {
			b.Error(err)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	benchIngest(b, agg, loop, msgs)
}

// benchIngest publishes the advisories, round after round, on loop, to
// which agg listens.
func benchIngest(b *testing.B, agg *Aggregator, loop *Loopback, msgs []Msg) {
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		k := i % benchNodes
		if err := loop.Publish(ctx, msgs[k]); err != nil {
			b.Fatal(err)
		}
	}
	el := time.Since(start)
	b.ReportMetric(float64(b.N)/el.Seconds(), "advisories/s")
	if s := agg.Stats(); s.Refused > 0 {
		b.Fatalf("refused %d advisories", s.Refused)
	}
}

// receivePlain is Receive with the plain path of reading an advisory:
// Wire.Check, then encoding/json, as the package reads its other
// messages. Its refusals are returned, not recorded.
func (a *Aggregator) receivePlain(ctx context.Context, m Msg) error {
	if _, err := a.cfg.Wire.verify(kindAdvisory, m); err != nil {
		return err
	}
	if err := a.cfg.Wire.Check(kindAdvisory, m.Data); err != nil {
		return err
	}
	adv, err := unmarshalAdvisory(m.Data)
	if err != nil {
		return err
	}
	at, err := a.checkAdvisory(m.Subject, adv)
	if err != nil {
		return err
	}
	refs := map[string]string{"node_id": adv.NodeID, refMeshKind: string(kindAdvisory)}
	if _, err := a.cfg.Wire.receivedRefs(ctx, kindAdvisory, m.Subject, m.Data, refs); err != nil {
		return err
	}
	_, err = a.ingest(ctx, adv, heard{Tier: adv.DetectorState.Tier, At: at})
	return err
}

// BenchmarkEventAggregationLatency measures, with 10,000 nodes ingested,
// the time from publishing an advisory that newly reports emergency to the
// aggregation it triggers being sent.
func BenchmarkEventAggregationLatency(b *testing.B) {
	var sent time.Time
	var lat []time.Duration
	agg, loop, msgs, w, sign := benchMesh(b, func(_ Aggregation, _ []byte, trigger string) {
		if trigger != "timer" {
			lat = append(lat, time.Since(sent))
		}
	})
	ctx := context.Background()
	for i := range benchNodes {
		if err := loop.Publish(ctx, msgs[i]); err != nil {
			b.Fatal(err)
		}
	}
	start := w.Start
	fire := fireReading()
	quiet := msgs
	hot := make([]Msg, benchNodes)
	for i := range benchNodes {
		n, _ := NewNode(NodeConfig{ID: w.NodeID(i), Position: w.Position(i), Sensor: fixedSensor(fire, Conditions{})})
		_, raw, _, _ := n.Advise(ctx, start, fire, Conditions{})
		hot[i] = sign(i, raw)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := (i * 7919) % benchNodes
		sent = time.Now()
		if err := loop.Publish(ctx, hot[k]); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = loop.Publish(ctx, quiet[k]) // back to info for the next round
		b.StartTimer()
	}
	b.StopTimer()
	if len(lat) != b.N {
		b.Fatalf("%d event aggregations for %d events (stats %+v)", len(lat), b.N, agg.Stats())
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*50/100].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkAggregatorIngestParallel is BenchmarkAggregatorIngest with the
// loopback delivering on one worker per core: admission runs in parallel,
// and sealing the ledger entry is serialised by the recorder's lock.
func BenchmarkAggregatorIngestParallel(b *testing.B) {
	agg, _, msgs, _, _ := benchMesh(b, nil)
	loop := newLoopbackWorkers(Faults{}, runtime.GOMAXPROCS(0))
	defer loop.Close()
	agg.cfg.Wire.Transport = loop
	if _, err := agg.Listen(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		k := i % benchNodes
		if err := loop.Publish(ctx, msgs[k]); err != nil {
			b.Fatal(err)
		}
	}
	loop.Drain()
	el := time.Since(start)
	b.ReportMetric(float64(b.N)/el.Seconds(), "advisories/s")
	if s := agg.Stats(); s.Refused > 0 || s.Ingested < int64(b.N) {
		b.Fatalf("stats %+v for %d advisories", s, b.N)
	}
}

// BenchmarkAdvisoryContract measures the contract check alone (size,
// $defs schema with strict JSON, numbers canonical JSON refuses) of one
// advisory: the floor of ingest cost.
func BenchmarkAdvisoryContract(b *testing.B) {
	reg, err := contract.Load(contract.Options{Contracts: []contract.Source{peas.Contract()}})
	if err != nil {
		b.Fatal(err)
	}
	w := &Wire{Validator: reg}
	world := benchRidge{}
	n, _ := NewNode(NodeConfig{ID: world.NodeID(0), Position: world.Position(0), Sensor: fixedSensor(world.Read(0, time.Time{}))})
	r, c := world.Read(0, time.Time{})
	_, raw, _, err := n.Advise(context.Background(), time.Unix(1_800_000_000, 0), r, c)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := w.Check(kindAdvisory, raw); err != nil {
			b.Fatal(err)
		}
	}
}
