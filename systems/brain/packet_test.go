package brain

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestProject(t *testing.T) {
	long := strings.Repeat("a", 200)
	emptySum := sha256.Sum256(nil)
	tests := []struct {
		name, text, mode string
		check            func(t *testing.T, got string)
	}{
		{"SummaryOnly200CharsIsA71CharHash", long, localSummaryOnly, func(t *testing.T, got string) {
			sum := sha256.Sum256([]byte(long))
			if len(got) != hashedLen || got != "sha256:"+hex.EncodeToString(sum[:]) {
				t.Fatalf("got %q (%d chars)", got, len(got))
			}
		}},
		{"FilenamesModeHashesToo", "notes.md", allowFilenames, func(t *testing.T, got string) {
			if !strings.HasPrefix(got, "sha256:") || len(got) != hashedLen {
				t.Fatalf("got %q", got)
			}
		}},
		{"EmptyTextHashesTheEmptyString", "", localSummaryOnly, func(t *testing.T, got string) {
			if got != "sha256:"+hex.EncodeToString(emptySum[:]) {
				t.Fatalf("got %q", got)
			}
		}},
		{"UnknownModeHashes", "x", "raw", func(t *testing.T, got string) {
			if !strings.HasPrefix(got, "sha256:") {
				t.Fatalf("got %q", got)
			}
		}},
		{"Excerpt200CharsIsCutTo120", long, allowExcerpts, func(t *testing.T, got string) {
			if utf8.RuneCountInString(got) != maxExcerpt || !strings.HasSuffix(got, "...") || got[:117] != long[:117] {
				t.Fatalf("got %q (%d chars)", got, utf8.RuneCountInString(got))
			}
		}},
		{"Excerpt120CharsIsKept", long[:120], allowExcerpts, func(t *testing.T, got string) {
			if got != long[:120] {
				t.Fatalf("got %q", got)
			}
		}},
		{"Excerpt121CharsIsCut", long[:121], allowExcerpts, func(t *testing.T, got string) {
			if utf8.RuneCountInString(got) != 120 || !strings.HasSuffix(got, "...") {
				t.Fatalf("got %q", got)
			}
		}},
		{"ExcerptCountsCharactersNotBytes", strings.Repeat("é", 130), allowExcerpts, func(t *testing.T, got string) {
			if utf8.RuneCountInString(got) != 120 || !utf8.ValidString(got) {
				t.Fatalf("got %d chars", utf8.RuneCountInString(got))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, project(tt.text, tt.mode)) })
	}
}

func TestProjectHashesTheNFCForm(t *testing.T) {
	if project("Cafe\u0301", localSummaryOnly) != project("Caf\u00e9", localSummaryOnly) {
		t.Fatal("decomposed and composed forms hash differently")
	}
}

func TestIDHashAndHSIBand(t *testing.T) {
	pattern := regexp.MustCompile(`^[0-9a-f]{12}$`)
	for _, id := range []string{"opp-1", "", "brain_insight:opportunity_rank:0"} {
		if h := idHash(id); !pattern.MatchString(h) {
			t.Errorf("IDHash(%q) = %q", id, h)
		}
	}
	sum := sha256.Sum256([]byte("opp-deposits"))
	if idHash("opp-deposits") != hex.EncodeToString(sum[:])[:12] {
		t.Error("IDHash is not the first 12 hex digits of sha256(id)")
	}
	bands := []struct {
		hsi  float64
		want string
	}{{100, "high"}, {70, "high"}, {69.9, "medium"}, {40, "medium"}, {39.99, "low"}, {0, "low"}}
	for _, b := range bands {
		if got := hsiBand(b.hsi); got != b.want {
			t.Errorf("HSIBand(%v) = %s, want %s", b.hsi, got, b.want)
		}
	}
}

// TestNeighbourhoodScore checks the exact formula on a hand-made room.
func TestNeighbourhoodScore(t *testing.T) {
	r := emptyRoom(t)
	importFile(t, r, RoomFile{
		Nodes: []Node{
			{ID: "focus", Type: "claim", SourceSection: "s1", UpdatedAt: at(0)},
			{ID: "a", Type: "claim", SourceSection: "s1", Confidence: conf(0.9), UpdatedAt: at(-45 * 24 * time.Hour)},
			{ID: "b", Type: "claim", SourceSection: "s2", UpdatedAt: at(-100 * 24 * time.Hour)},
			{ID: "c", Type: "assumption", SourceSection: "s1", Confidence: conf(0.2), UpdatedAt: at(0)},
		},
		Edges: []Edge{
			{Source: "focus", Target: "a", Type: "SUPPORTS"},
			{Source: "focus", Target: "a", Type: "INFORMS"},
			{Source: "a", Target: "b", Type: "WHATEVER"},
			{Source: "a", Target: "c", Type: "ASSUMES"},
			{Source: "b", Target: "focus", Type: "CONTRADICTS"},
		},
	})
	p := build(t, r, BuildOptions{Job: "summarize_neighborhood", Focus: "focus"})
	want := map[string]struct {
		depth int
		edge  string
		score float64
	}{
		// 0.4·0.8 + 0.2·0.5 + 0.2·0.9 + 0.2·1
		"a": {1, "SUPPORTS", 0.8},
		// 0.4·0.3 + 0 + 0.2·0.5 + 0
		"b": {2, "WHATEVER", 0.22},
		// 0.4·0.9 + 0.2·1 + 0.2·0.2 + 0.2·1
		"c": {2, "ASSUMES", 0.8},
	}
	got := append(p.LocalGraphSummary.NearestClaims, p.LocalGraphSummary.NearestAssumptions...)
	if len(got) != len(want) {
		t.Fatalf("got %d projections, want %d: %+v", len(got), len(want), got)
	}
	for _, c := range got {
		w := want[c.ID]
		if c.Depth != w.depth || c.EdgeTypeIn != w.edge || c.Score != w.score {
			t.Errorf("%s: depth %d edge %s score %v, want %+v", c.ID, c.Depth, c.EdgeTypeIn, c.Score, w)
		}
	}
	if u := p.LocalGraphSummary.UnsupportedClaims; len(u) != 1 || u[0].ClaimID != "b" {
		t.Errorf("unsupported = %+v, want only b (a has a SUPPORTS edge)", u)
	}
	if p.LocalGraphSummary.FrameworkChainHint != nil {
		t.Error("framework_chain_hint present without a chain in the room")
	}
	if strings.Contains(string(marshal(t, p)), "framework_chain_hint") {
		t.Error("framework_chain_hint key present")
	}
}

// TestTopKLimits builds a crowded neighbourhood and checks every cap.
func TestTopKLimits(t *testing.T) {
	r := emptyRoom(t)
	f := RoomFile{Room: &Config{JTBDTags: []string{"x"}}, Nodes: []Node{{ID: "focus", Type: "claim", UpdatedAt: at(0)}}}
	add := func(id, typ, edge string, c float64) {
		f.Nodes = append(f.Nodes, Node{ID: id, Type: typ, Confidence: conf(c), UpdatedAt: at(-time.Hour),
			Properties: []byte(`{"summary":"s","tags":["x"],"hsi":50}`)})
		f.Edges = append(f.Edges, Edge{Source: "focus", Target: id, Type: edge})
	}
	for i := range 40 {
		add(pad("claim", i), "claim", "INFORMS", float64(i)/40)
		add(pad("assume", i), "assumption", "ASSUMES", float64(i)/40)
		add(pad("contra", i), "claim", "CONTRADICTS", float64(i)/40)
		add(pad("opp", i), "opportunity", "ENABLES", 0.5)
	}
	for i := range 30 {
		f.MemoryEvents = append(f.MemoryEvents, MemoryEvent{ID: pad("ev", i), EventType: "node_edited", CreatedAt: at(-time.Duration(i) * time.Hour)})
	}
	importFile(t, r, f)
	p := build(t, r, BuildOptions{Job: "suggest_next_move", Focus: "focus"})
	s := p.LocalGraphSummary
	limits := []struct {
		name      string
		got, want int
	}{
		{"nearest_claims", len(s.NearestClaims), 5},
		{"nearest_assumptions", len(s.NearestAssumptions), 5},
		{"contradictions", len(s.Contradictions), 5},
		{"unsupported_claims", len(s.UnsupportedClaims), 5},
		{"recent_changes", len(s.RecentChanges), 10},
		{"banked_opportunities.items", len(s.BankedOpportunities.Items), 3},
		{"banked_opportunities.count", s.BankedOpportunities.Count, 40},
	}
	for _, l := range limits {
		if l.got != l.want {
			t.Errorf("%s: %d, want %d", l.name, l.got, l.want)
		}
	}
	for i := 1; i < len(s.NearestClaims); i++ {
		if s.NearestClaims[i].Score > s.NearestClaims[i-1].Score {
			t.Errorf("nearest_claims not best first: %+v", s.NearestClaims)
		}
	}
	// The 24-hour window: ev-24 and older are out, and only the newest ten stay.
	for _, c := range s.RecentChanges {
		if c.CreatedAt < testNow.Add(-24*time.Hour).UnixMilli() {
			t.Errorf("recent change %s is older than 24 h", c.ID)
		}
	}
	hood, err := r.walk(context.Background(), "focus")
	if err != nil || len(hood) != 160 {
		t.Fatalf("walk reached %d nodes (%v), want 160", len(hood), err)
	}
}

func pad(prefix string, i int) string { return fmt.Sprintf("%s-%03d", prefix, i) }

// TestBankedOpportunitiesFollowChanges: the opportunity bank is cached,
// and any change to an opportunity, by any writer, is seen by the next
// packet.
func TestBankedOpportunitiesFollowChanges(t *testing.T) {
	r := exampleRoom(t)
	ctx := context.Background()
	first := build(t, r, BuildOptions{Job: "opportunity_rank", Focus: "claim-core"}).LocalGraphSummary.BankedOpportunities
	if first.Count != 4 || first.Items[0].IDHash != idHash("opp-deposits") {
		t.Fatalf("bank %+v", first)
	}
	steps := []struct {
		name  string
		sql   string
		count int
		top   string
	}{
		{"HSIRaised", `UPDATE nodes SET properties = json_set(properties, '$.hsi', 100, '$.tags', json('["clinics","payments","no-shows"]')) WHERE id = 'opp-dental'`, 4, "opp-dental"},
		{"Rejected", `UPDATE nodes SET review_status = 'rejected' WHERE id = 'opp-dental'`, 3, "opp-deposits"},
		{"Inserted", `INSERT INTO nodes (id, type, properties, review_status, created_at, updated_at)
			VALUES ('opp-new', 'opportunity', '{"hsi":100,"tags":["clinics","payments","no-shows"]}', 'proposed', 0, 0)`, 4, "opp-new"},
		{"Deleted", `DELETE FROM nodes WHERE id = 'opp-new'`, 3, "opp-deposits"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if _, err := r.db.ExecContext(ctx, s.sql); err != nil {
				t.Fatal(err)
			}
			b := build(t, r, BuildOptions{Job: "opportunity_rank", Focus: "claim-core"}).LocalGraphSummary.BankedOpportunities
			if b.Count != s.count || b.Items[0].IDHash != idHash(s.top) {
				t.Fatalf("bank %+v, want count %d top %s", b, s.count, s.top)
			}
		})
	}
}

func TestBankedOpportunityOddProperties(t *testing.T) {
	r := emptyRoom(t)
	importFile(t, r, RoomFile{Nodes: []Node{
		{ID: "focus", Type: "claim"},
		{ID: "o-text-hsi", Type: "opportunity", Properties: json.RawMessage(`{"hsi":"high","tags":"clinics"}`)},
		{ID: "o-big-hsi", Type: "opportunity", Properties: json.RawMessage(`{"hsi":250,"tags":[1,"ok"]}`)},
		{ID: "o-none", Type: "opportunity"},
	}})
	b := build(t, r, BuildOptions{Job: "opportunity_rank", Focus: "focus"}).LocalGraphSummary.BankedOpportunities
	if b.Count != 3 || b.Items[0].IDHash != idHash("o-big-hsi") || b.Items[0].HSIBand != "high" || b.Items[0].CompositeScore != 0.503 {
		t.Fatalf("bank %+v", b)
	}
	for _, it := range b.Items[1:] {
		if it.HSIBand != "low" || len(it.Tags) != 0 {
			t.Errorf("item %+v", it)
		}
	}
}

// TestBankedMatchesBruteForce compares the cached ranking with scoring
// every opportunity from scratch, on a room where the walk reaches some.
func TestBankedMatchesBruteForce(t *testing.T) {
	r := emptyRoom(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 8))
	tags := []string{"a", "b", "c", "d"}
	f := RoomFile{Room: &Config{JTBDTags: []string{"a", "b"}}, Nodes: []Node{{ID: "focus", Type: "opportunity",
		Properties: json.RawMessage(`{"hsi":10}`)}}}
	for i := range 300 {
		id := pad("opp", i)
		f.Nodes = append(f.Nodes, Node{ID: id, Type: "opportunity", Properties: marshal(t, map[string]any{
			"hsi": rng.IntN(101), "tags": []string{tags[rng.IntN(4)], tags[rng.IntN(4)]}})})
		if rng.IntN(10) == 0 {
			f.Edges = append(f.Edges, Edge{Source: "focus", Target: id, Type: "ENABLES"})
		}
	}
	importFile(t, r, f)
	for _, jtbd := range [][]string{{"a", "b"}, nil, {"d"}} {
		hops, err := r.walk(ctx, "focus")
		if err != nil {
			t.Fatal(err)
		}
		depths := map[string]int{"focus": 0}
		for id, h := range hops {
			depths[id] = h.depth
		}
		got, err := r.banked(ctx, depths, jtbd)
		if err != nil {
			t.Fatal(err)
		}
		var all []BankedOpportunity
		for _, n := range f.Nodes {
			t := textsOf(n.Properties)
			var hsi float64
			json.Unmarshal(t.HSI, &hsi)
			tg := safeTags(t.Tags)
			all = append(all, bankItem{id: n.ID, idHash: idHash(n.ID), hsi: hsi, tags: tg, tagSet: tagSet(tg)}.score(depths, tagSet(jtbd)))
		}
		slices.SortFunc(all, compareBanked)
		if want := all[:3]; got.Count != 301 || !reflect.DeepEqual(got.Items, want) {
			t.Errorf("jtbd %v: got %+v\nwant %+v", jtbd, got.Items, want)
		}
	}
}
