package brain

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// opportunityBank caches what scoring needs of the room's live
// opportunities, for one value of counters.opportunities: scoring a bank of
// thousands must not read thousands of rows per packet.
type opportunityBank struct {
	version int64
	items   []bankItem
	byID    map[string]int // index into items
	// ranked holds every item scored as unreachable (depth 99) for the
	// jtbd tags rankedKey, best first. A walk can only raise an item's
	// score, so a packet needs the reached items and the head of ranked.
	rankedKey string
	ranked    []BankedOpportunity
	rankedID  []string // the id of each ranked entry
}

type bankItem struct {
	id, idHash string
	hsi        float64
	tags       []string        // safe tags, as sent
	tagSet     map[string]bool // lower-cased, for jaccard
}

// banked scores the live opportunities and returns the count and the best
// three: 0.5·hsi/100 + 0.3/(1+depth) + 0.2·jaccard(jtbd tags, tags), with
// depth from the neighbourhood walk (99 when the walk does not reach it).
func (r *Room) banked(ctx context.Context, depths map[string]int, jtbdTags []string) (BankedOpportunities, error) {
	want := tagSet(jtbdTags)
	r.mu.Lock()
	defer r.mu.Unlock()
	bank, err := r.opportunities(ctx)
	if err != nil {
		return BankedOpportunities{}, err
	}
	bank.rank(want)
	var best []BankedOpportunity
	for id := range depths {
		if i, ok := bank.byID[id]; ok {
			best = keepBest(best, bank.items[i].score(depths, want), topOpportunities)
		}
	}
	taken := 0
	for i, o := range bank.ranked {
		if taken == topOpportunities {
			break
		}
		if _, reached := depths[bank.rankedID[i]]; !reached {
			best = keepBest(best, o, topOpportunities)
			taken++
		}
	}
	if best == nil {
		best = []BankedOpportunity{}
	}
	for i := range best {
		best[i].Tags = slices.Clone(best[i].Tags) // the bank is shared
	}
	return BankedOpportunities{Count: len(bank.items), Items: best}, nil
}

// rank scores every item as unreachable for the jtbd tags want, unless
// already done for the same tags.
func (b *opportunityBank) rank(want map[string]bool) {
	key := strings.Join(slices.Sorted(maps.Keys(want)), "\x00")
	if b.ranked != nil && b.rankedKey == key {
		return
	}
	order := make([]int, len(b.items))
	scores := make([]BankedOpportunity, len(b.items))
	for i, it := range b.items {
		order[i], scores[i] = i, it.score(nil, want)
	}
	slices.SortFunc(order, func(x, y int) int { return compareBanked(scores[x], scores[y]) })
	b.rankedKey, b.ranked, b.rankedID = key, make([]BankedOpportunity, len(order)), make([]string, len(order))
	for j, i := range order {
		b.ranked[j], b.rankedID[j] = scores[i], b.items[i].id
	}
}

// compareBanked orders opportunities best first: by score, then id hash.
func compareBanked(a, b BankedOpportunity) int {
	return cmp.Or(cmp.Compare(b.CompositeScore, a.CompositeScore), strings.Compare(a.IDHash, b.IDHash))
}

// keepBest inserts o into best (best first) and keeps at most k.
func keepBest(best []BankedOpportunity, o BankedOpportunity, k int) []BankedOpportunity {
	i, _ := slices.BinarySearchFunc(best, o, compareBanked)
	if i >= k {
		return best
	}
	best = slices.Insert(best, i, o)
	return best[:min(len(best), k)]
}

func (it bankItem) score(depths map[string]int, want map[string]bool) BankedOpportunity {
	depth, ok := depths[it.id]
	if !ok {
		depth = unreachableDepth
	}
	score := 0.5*it.hsi/100 + 0.3/float64(1+depth) + 0.2*jaccard(want, it.tagSet)
	return BankedOpportunity{IDHash: it.idHash, Tags: it.tags, HSIBand: hsiBand(it.hsi), CompositeScore: round3(score)}
}

// opportunities returns the cached bank, reloading it when any writer has
// changed an opportunity since it was loaded. The caller holds r.mu.
func (r *Room) opportunities(ctx context.Context) (*opportunityBank, error) {
	var version int64
	err := r.db.QueryRowContext(ctx, `SELECT n FROM counters WHERE name = 'opportunities'`).Scan(&version)
	if err != nil {
		return nil, fmt.Errorf("read opportunity version: %w", err)
	}
	if r.bank != nil && r.bank.version == version {
		return r.bank, nil
	}
	bank, err := r.loadBank(ctx, version)
	if err != nil {
		return nil, err
	}
	r.bank = bank
	return bank, nil
}

// loadBank reads the live opportunities. It runs after the version was
// read, so a concurrent change leaves a bank that is stale at worst by one
// version, and reloaded on the next packet.
func (r *Room) loadBank(ctx context.Context, version int64) (*opportunityBank, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT id, json_extract(properties, '$.hsi'),
		json_extract(properties, '$.tags') FROM nodes INDEXED BY nodes_opportunity_bank
		WHERE type = 'opportunity' AND review_status IN ('proposed', 'confirmed', 'validated')`)
	if err != nil {
		return nil, fmt.Errorf("list opportunities: %w", err)
	}
	bank := &opportunityBank{version: version, byID: map[string]int{}}
	err = eachRow(rows, func() error {
		var id string
		var hsi any
		var tags sql.NullString
		if err := rows.Scan(&id, &hsi, &tags); err != nil {
			return err
		}
		bank.byID[id] = len(bank.items)
		bank.items = append(bank.items, newBankItem(id, number(hsi), json.RawMessage(tags.String)))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list opportunities: %w", err)
	}
	return bank, nil
}

// number returns a JSON number extracted by SQLite, or 0 for anything else.
func number(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

func newBankItem(id string, hsi float64, rawTags json.RawMessage) bankItem {
	tags := safeTags(rawTags)
	return bankItem{id: id, idHash: idHash(id), hsi: min(max(hsi, 0), 100), tags: tags, tagSet: tagSet(tags)}
}

// safeTags keeps the tags that are short labels (at most 30 characters of
// letters, digits, space, - and _); anything else (an address, a path, a
// sentence) never leaves the room.
func safeTags(raw json.RawMessage) []string {
	var tags []string
	if json.Unmarshal(raw, &tags) != nil {
		return []string{}
	}
	out := []string{}
	for _, t := range tags {
		if len(t) <= maxTagLen && labelPattern.MatchString(t) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func tagSet(tags []string) map[string]bool {
	m := make(map[string]bool, len(tags))
	for _, t := range tags {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			m[t] = true
		}
	}
	return m
}

// jaccard is |a∩b| / |a∪b|, 0 when both are empty.
func jaccard(a, b map[string]bool) float64 {
	inter := 0
	for t := range a {
		if b[t] {
			inter++
		}
	}
	union := len(a) + len(b) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}
