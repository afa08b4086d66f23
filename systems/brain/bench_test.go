package brain

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// benchRoomSize is the node count of the benchmark room.
const benchRoomSize = 100_000

// BenchmarkBuildPacket builds packets about random focus nodes of a
// 100,000-node room (about 5 outgoing edges a node, some 12,000
// opportunities, 50,000 memory events) and reports the p50 and p99 build
// latency, and the first build, which loads the opportunity bank.
func BenchmarkBuildPacket(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "room.db")
	r, err := OpenRoom(ctx, path, RoomOptions{Now: fixedClock})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := generateRoom(ctx, r, benchRoomSize, rand.New(rand.NewPCG(1, 2))); err != nil {
		b.Fatal(err)
	}
	b.Logf("generated a %d-node room in %v", benchRoomSize, time.Since(start).Round(time.Millisecond))
	if err := r.SetConfig(ctx, Config{Stage: "validation", JTBD: "Recover revenue lost to no-shows",
		JTBDTags: []string{"clinics", "payments"}}); err != nil {
		b.Fatal(err)
	}
	// Build from the room at rest, as a later process would find it.
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	if r, err = OpenRoom(ctx, path, RoomOptions{Now: fixedClock}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	jobs := Jobs()
	var lat []time.Duration
	for b.Loop() {
		o := BuildOptions{Job: jobs[rng.IntN(len(jobs))], Focus: benchID(rng.IntN(benchRoomSize))}
		t0 := time.Now()
		if _, err := r.Build(ctx, o); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	r.Close()
	b.ReportMetric(ms(lat[0]), "first-ms") // includes loading the opportunity bank
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func benchID(i int) string { return fmt.Sprintf("n%06d", i) }

// generateRoom writes n nodes, about 5n edges and n/2 memory events in one
// transaction, through the same tables and indexes the room always uses.
func generateRoom(ctx context.Context, r *Room, n int, rng *rand.Rand) error {
	return r.inTx(ctx, func(tx *sql.Tx) error {
		if err := generateNodes(ctx, tx, n, rng); err != nil {
			return err
		}
		if err := generateEdges(ctx, tx, n, rng); err != nil {
			return err
		}
		return generateEvents(ctx, tx, n/2, rng)
	})
}

func generateNodes(ctx context.Context, tx *sql.Tx, n int, rng *rand.Rand) error {
	st, err := tx.PrepareContext(ctx, `INSERT INTO nodes (`+nodeColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	benchTypes := []string{"claim", "claim", "claim", "claim", "assumption", "assumption",
		"evidence", "evidence", "CausalClaim", "opportunity", "decision", "entity", "entity", "question"}
	statuses := []string{statusConfirmed, statusConfirmed, statusProposed, statusValidated, statusRejected}
	tags := []string{"pricing", "clinics", "payments", "retention", "onboarding", "compliance", "growth", "ops"}
	for i := range n {
		typ := benchTypes[rng.IntN(len(benchTypes))]
		if i%20 == 0 {
			typ = "opportunity"
		}
		props := fmt.Sprintf(`{"summary":"Generated %s %d about section %d","body":"%0200d","tags":["%s","%s"],"hsi":%d}`,
			typ, i, i%50, i, tags[rng.IntN(len(tags))], tags[rng.IntN(len(tags))], rng.IntN(101))
		updated := testNow.Add(-time.Duration(rng.Int64N(int64(180 * 24 * time.Hour)))).UnixMilli()
		_, err := st.ExecContext(ctx, benchID(i), typ, props, fmt.Sprintf("section-%d", i%50), rng.Float64(),
			statuses[rng.IntN(len(statuses))], "user", "maya", updated, updated)
		if err != nil {
			return fmt.Errorf("node %d: %w", i, err)
		}
	}
	return nil
}

func generateEdges(ctx context.Context, tx *sql.Tx, n int, rng *rand.Rand) error {
	st, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO edges (source, type, target, properties, created_by)
		VALUES (?, ?, ?, '{}', 'user')`)
	if err != nil {
		return err
	}
	defer st.Close()
	benchEdgeTypes := []string{"SUPPORTS", "EVIDENCES", "CONTRADICTS", "INVALIDATES", "DEPENDS_ON",
		"ASSUMES", "INFORMS", "ENABLES", "CONVERGES", "MENTIONS_ENTITY", "RELATED_TO"}
	for i := range n {
		for range 1 + rng.IntN(9) { // 1..9, mean 5
			j := (i + 1 + rng.IntN(2000)) % n // mostly local, like sections of one room
			if rng.IntN(10) == 0 {
				j = rng.IntN(n)
			}
			if _, err := st.ExecContext(ctx, benchID(i), benchEdgeTypes[rng.IntN(len(benchEdgeTypes))], benchID(j)); err != nil {
				return fmt.Errorf("edge from %d: %w", i, err)
			}
		}
	}
	return nil
}

func generateEvents(ctx context.Context, tx *sql.Tx, n int, rng *rand.Rand) error {
	st, err := tx.PrepareContext(ctx, `INSERT INTO memory_events (id, event_type, target_node_id, payload, created_at)
		VALUES (?, 'node_edited', ?, '{}', ?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for i := range n {
		at := testNow.Add(-time.Duration(rng.Int64N(int64(30 * 24 * time.Hour)))).UnixMilli()
		if _, err := st.ExecContext(ctx, fmt.Sprintf("ev%06d", i), benchID(rng.IntN(benchRoomSize)), at); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
	}
	return nil
}
