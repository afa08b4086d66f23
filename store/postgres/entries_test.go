package postgres

import (
	"context"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/store/postgres/pgtest"
)

// TestEntriesQuery selects by trace, kind, refs, position and count.
func TestEntriesQuery(t *testing.T) {
	db := open(t, pgtest.URL(t), Options{})
	ctx := context.Background()
	add := func(kind, trace string, refs map[string]string) {
		t.Helper()
		e := entry(kind, trace)
		e.Refs = refs
		if _, err := db.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	add("call.started", "t1", nil)                                                        // 1
	add("call.succeeded", "t1", map[string]string{"approval_request_id": "ap-1"})         // 2
	add("call.started", "t2", map[string]string{"approval_request_id": "ap-1", "b": "x"}) // 3
	add("call.started", "t1", map[string]string{"approval_request_id": "ap-2"})           // 4
	add("call.failed", "t2", map[string]string{"b": "x"})                                 // 5
	for _, tc := range []struct {
		name string
		q    custody.Query
		want []int64
	}{
		{"All", custody.Query{}, []int64{1, 2, 3, 4, 5}},
		{"Trace", custody.Query{Trace: "t1"}, []int64{1, 2, 4}},
		{"Kind", custody.Query{Kind: "call.started"}, []int64{1, 3, 4}},
		{"TraceAndKind", custody.Query{Trace: "t2", Kind: "call.started"}, []int64{3}},
		{"Ref", custody.Query{Refs: map[string]string{"approval_request_id": "ap-1"}}, []int64{2, 3}},
		{"TwoRefs", custody.Query{Refs: map[string]string{"approval_request_id": "ap-1", "b": "x"}}, []int64{3}},
		{"After", custody.Query{After: 3}, []int64{4, 5}},
		{"Limit", custody.Query{Limit: 2}, []int64{1, 2}},
		{"AfterAndLimit", custody.Query{After: 1, Limit: 2, Trace: "t1"}, []int64{2, 4}},
		{"NegativeAfter", custody.Query{After: -5, Limit: 1}, []int64{1}},
		{"None", custody.Query{Trace: "t9"}, []int64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es, err := db.Entries(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if es == nil {
				t.Fatal("Entries returned nil, want an empty slice")
			}
			got := make([]int64, len(es))
			for i, e := range es {
				got[i] = e.Seq
				if e.Refs == nil {
					t.Fatalf("entry %d has nil refs", e.Seq)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("Entries(%+v) = %v, want %v", tc.q, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("Entries(%+v) = %v, want %v", tc.q, got, tc.want)
				}
			}
		})
	}
	_, err := db.Entries(ctx, custody.Query{Limit: -1})
	wantKind(t, "Entries with a negative limit", err, custody.EINVALID)
}

// TestEntriesKeepBytes: an entry reads back as sealed, its body byte for
// byte.
func TestEntriesKeepBytes(t *testing.T) {
	db := open(t, pgtest.URL(t), Options{})
	e := entry("test.kind", "t1")
	e.Body = []byte("{ \"n\" : 1,\n  \"s\": \"\\u00e9\" }")
	e.Refs = map[string]string{"k": "v"}
	sealed, err := db.Append(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	es, err := db.Entries(context.Background(), custody.Query{})
	if err != nil || len(es) != 1 {
		t.Fatalf("Entries = %d, %v", len(es), err)
	}
	got := es[0]
	if string(got.Body) != string(e.Body) || got.Hash != sealed.Hash || got.Prev != sealed.Prev ||
		got.BodySHA256 != sealed.BodySHA256 || got.At != sealed.At || got.Refs["k"] != "v" || got.Actor != e.Actor {
		t.Fatalf("entry read back = %+v, sealed %+v", got, sealed)
	}
}
