package brain

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Neighbourhood walk limits.
const (
	walkDepth        = 2
	neighbourhoodTop = 50
	recencyWindow    = 90 * 24 * time.Hour
	// inChunk bounds the ids bound into one IN (...) query.
	inChunk = 400
)

// hop is a node reached by the walk: its shallowest depth and the heaviest
// edge that reached it there.
type hop struct {
	id          string
	depth       int
	edgeType    string
	weight      float64
	contradicts bool // a CONTRADICTS edge from the focus reaches it
	explanation string
	node        Node
	score       float64
}

// walk follows outgoing edges from focus to depth 2 and returns every node
// reached (the focus excluded), keyed by id.
func (r *Room) walk(ctx context.Context, focus string) (map[string]*hop, error) {
	seen := map[string]*hop{}
	frontier := []string{focus}
	for depth := 1; depth <= walkDepth && len(frontier) > 0; depth++ {
		var next []string
		err := r.outEdges(ctx, frontier, func(src, typ, dst, props string) {
			if dst == focus {
				return
			}
			h, ok := seen[dst]
			if !ok {
				h = &hop{id: dst, depth: depth}
				seen[dst] = h
				next = append(next, dst)
			}
			if h.depth == depth {
				h.offer(src == focus, typ, props)
			}
		})
		if err != nil {
			return nil, err
		}
		frontier = next
	}
	return seen, nil
}

// offer records one more edge reaching h at its depth.
func (h *hop) offer(fromFocus bool, typ, props string) {
	if w := edgeWeight(typ); w > h.weight || (w == h.weight && typ < h.edgeType) {
		h.weight, h.edgeType = w, typ
	}
	if fromFocus && typ == "CONTRADICTS" {
		h.contradicts = true
		h.explanation = explanationOf(props)
	}
}

// outEdges calls fn for every edge leaving one of sources.
func (r *Room) outEdges(ctx context.Context, sources []string, fn func(src, typ, dst, props string)) error {
	for chunk := range slices.Chunk(sources, inChunk) {
		rows, err := r.db.QueryContext(ctx, `SELECT source, type, target, properties FROM edges
			WHERE source IN (`+placeholders(len(chunk))+`)`, anySlice(chunk)...)
		if err != nil {
			return fmt.Errorf("walk edges: %w", err)
		}
		err = eachRow(rows, func() error {
			var src, typ, dst, props string
			if err := rows.Scan(&src, &typ, &dst, &props); err != nil {
				return err
			}
			fn(src, typ, dst, props)
			return nil
		})
		if err != nil {
			return fmt.Errorf("walk edges: %w", err)
		}
	}
	return nil
}

// loadHops reads the node of every hop, dropping hops whose node is absent
// or rejected.
func (r *Room) loadHops(ctx context.Context, hops map[string]*hop) error {
	ids := make([]string, 0, len(hops))
	for id := range hops {
		ids = append(ids, id)
	}
	found := make(map[string]bool, len(ids))
	for chunk := range slices.Chunk(ids, inChunk) {
		rows, err := r.db.QueryContext(ctx, `SELECT `+nodeColumns+` FROM nodes
			WHERE review_status <> 'rejected' AND id IN (`+placeholders(len(chunk))+`)`, anySlice(chunk)...)
		if err != nil {
			return fmt.Errorf("load neighbourhood: %w", err)
		}
		err = eachRow(rows, func() error {
			n, err := scanNode(rows)
			if err == nil {
				hops[n.ID].node, found[n.ID] = n, true
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("load neighbourhood: %w", err)
		}
	}
	for id := range hops {
		if !found[id] {
			delete(hops, id)
		}
	}
	return nil
}

// rank scores every hop against focus at time now and returns the best
// neighbourhoodTop, best first.
func rank(hops map[string]*hop, focus Node, now time.Time) []*hop {
	all := make([]*hop, 0, len(hops))
	for _, h := range hops {
		h.score = round3(0.4*h.weight + 0.2*recency(h.node.UpdatedAt, now) +
			0.2*confidence(h.node) + 0.2*sameSection(h.node, focus))
		all = append(all, h)
	}
	slices.SortFunc(all, func(a, b *hop) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.depth, b.depth), strings.Compare(a.id, b.id))
	})
	return all[:min(len(all), neighbourhoodTop)]
}

// recency is clamp(1 − age/90 days, 0, 1).
func recency(updated, now time.Time) float64 {
	age := now.Sub(updated)
	return min(max(1-float64(age)/float64(recencyWindow), 0), 1)
}

// confidence is the node's confidence, 0.5 when unknown.
func confidence(n Node) float64 {
	if n.Confidence == nil {
		return 0.5
	}
	return *n.Confidence
}

// sameSection is 1 when n shares the focus's non-empty source section.
func sameSection(n, focus Node) float64 {
	if focus.SourceSection != "" && n.SourceSection == focus.SourceSection {
		return 1
	}
	return 0
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// eachRow calls fn for every row and closes rows.
func eachRow(rows *sql.Rows, fn func() error) error {
	defer rows.Close()
	for rows.Next() {
		if err := fn(); err != nil {
			return err
		}
	}
	return rows.Err()
}
