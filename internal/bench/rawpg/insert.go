package rawpg

import (
	"encoding/json"

	"github.com/jackc/pgx/v5"
)

// queueInsert queues the INSERT of a group's rows as the store's writer
// does (postgres/writer.go): one statement, a column array each.
func queueInsert(q *pgx.Batch, group []*insert) {
	n := len(group)
	seq := make([]int64, n)
	at, kind, trace, actor, refs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	body := make([][]byte, n)
	sum, prev, hash := make([]string, n), make([]string, n), make([]string, n)
	for i, r := range group {
		e := &r.e
		seq[i], at[i], kind[i], trace[i], actor[i] = e.Seq, e.At, e.Kind, e.Trace, e.Actor
		refs[i], body[i], sum[i], prev[i], hash[i] = refsColumn(e.Refs), e.Body, e.BodySHA256, e.Prev, e.Hash
	}
	q.Queue(`INSERT INTO entries (seq, at, kind, trace, actor, refs, body, body_sha256, prev, hash)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bytea[], $8::text[], $9::text[], $10::text[])`,
		seq, at, kind, trace, actor, refs, body, sum, prev, hash)
}

// refsColumn returns the stored form of refs, as the store's does.
func refsColumn(refs map[string]string) string {
	if len(refs) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(refs) // a map of strings always encodes
	return string(b)
}
