package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/custody-dev/custody"
)

// Refs of a call.interrupted entry naming the intent it closes.
const (
	refIntentSeq  = "intent_seq"
	refIntentHash = "intent_hash"
)

// outcomeKinds are the kinds of the entries that end a call.
var outcomeKinds = map[string]bool{
	custody.KindCallSucceeded: true, custody.KindCallFailed: true, custody.KindCallRefused: true,
	custody.KindCallCancelled: true, custody.KindCallOutcomeUnknown: true, custody.KindContractBreach: true,
	custody.KindCallInterrupted: true,
}

// intent is a call.started entry waiting for its outcome.
type intent struct {
	e custody.Entry
	// prefix is the intent's body without its closing brace: every
	// entry of the same call begins with it (the tool and the exact
	// arguments), followed by a comma.
	prefix []byte
}

// openIntents pairs each call's intent with its outcome, in seq order.
// A call's entries share its trace, its actor and the opening of their
// bodies (see gate's bodyStart); an outcome ends the oldest open intent
// they share. A call.interrupted ends the intent its refs name.
type openIntents struct {
	byCall map[string][]intent // by trace and actor
}

func (o *openIntents) add(e custody.Entry) {
	switch {
	case e.Kind == custody.KindCallStarted && len(e.Body) > 0 && e.Body[len(e.Body)-1] == '}':
		k := e.Trace + "\x00" + e.Actor
		o.byCall[k] = append(o.byCall[k], intent{e: e, prefix: e.Body[:len(e.Body)-1]})
	case e.Kind == custody.KindCallInterrupted:
		o.end(e, func(in intent) bool { return e.Refs[refIntentSeq] == strconv.FormatInt(in.e.Seq, 10) })
	case outcomeKinds[e.Kind]:
		o.end(e, func(in intent) bool {
			return bytes.HasPrefix(e.Body, in.prefix) && len(e.Body) > len(in.prefix) && e.Body[len(in.prefix)] == ','
		})
	}
}

// end removes the oldest open intent of e's call that match accepts.
func (o *openIntents) end(e custody.Entry, match func(intent) bool) {
	k := e.Trace + "\x00" + e.Actor
	list := o.byCall[k]
	for i, in := range list {
		if match(in) {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(o.byCall, k)
	} else {
		o.byCall[k] = list
	}
}

// unfinished returns the intents left open, in seq order.
func (o *openIntents) unfinished() []custody.Entry {
	var out []custody.Entry
	for _, list := range o.byCall {
		for _, in := range list {
			out = append(out, in.e)
		}
	}
	slices.SortFunc(out, func(a, b custody.Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// interruptedPage is how many entries the scan reads a query.
const interruptedPage = 1000

// closeInterrupted appends a call.interrupted entry for every call.started
// up to the ledger's head as it finds it whose call has no outcome: the
// process that ran it stopped before recording one. It returns the
// entries it appended. Run it where no other process runs calls on the
// store: their calls in flight would look interrupted. A store that
// instances share closes only the calls of the instances that are gone
// (closeOrphans). A second run appends none: a call.interrupted ends the
// intent it names.
func closeInterrupted(ctx context.Context, l custody.Ledger, now func() string) ([]custody.Entry, error) {
	open, err := unfinishedIntents(ctx, l)
	if err != nil {
		return nil, err
	}
	return closeIntents(ctx, l, open, now)
}

// unfinishedIntents returns, in seq order, the call.started entries up to
// the ledger's head as it finds it whose call has no outcome.
func unfinishedIntents(ctx context.Context, l custody.Ledger) ([]custody.Entry, error) {
	head, err := l.Head(ctx)
	if err != nil {
		return nil, err
	}
	open := &openIntents{byCall: map[string][]intent{}}
	for after := int64(0); after < head.Seq; {
		page, err := l.Entries(ctx, custody.Query{After: after, Limit: interruptedPage})
		if err != nil {
			return nil, fmt.Errorf("read the ledger after seq %d: %w", after, err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			if e.Seq <= head.Seq {
				open.add(e)
			}
		}
		after = page[len(page)-1].Seq
	}
	return open.unfinished(), nil
}

// nsInterrupted counts, by the intent's seq, the call.interrupted entries
// that closed an intent: one at most.
const nsInterrupted = "interrupted"

// closeIntents appends the call.interrupted entry of each intent and
// returns those it appended. Each is committed on condition that it is
// the first to close its intent (a count, under nsInterrupted, limited to
// one), so that of two closers who found the same intent open one closes
// it and the other adds nothing.
func closeIntents(ctx context.Context, l custody.Ledger, intents []custody.Entry, now func() string) ([]custody.Entry, error) {
	var out []custody.Entry
	for _, in := range intents {
		once := custody.IncrState(nsInterrupted, strconv.FormatInt(in.Seq, 10), 1, 1).
			Else(custody.Errorf(custody.ECONFLICT, "the intent at seq %d is closed already", in.Seq))
		e, err := l.Commit(ctx, interruptedEntry(in, now()), once)
		switch kind := custody.ErrorKind(err); {
		case err == nil:
			out = append(out, e)
		case kind == custody.ECONFLICT || kind == custody.EDENIED:
			// Another closer closed it first.
		default:
			return out, fmt.Errorf("close the interrupted call at seq %d: %w", in.Seq, err)
		}
	}
	return out, nil
}

// interruptedEntry is the call.interrupted entry that ends the intent in:
// the same trace, actor, refs and opening of the body, the intent it
// closes, and an outcome that is unknown.
func interruptedEntry(in custody.Entry, at string) custody.Entry {
	refs := maps.Clone(in.Refs)
	if refs == nil {
		refs = map[string]string{}
	}
	refs[refIntentSeq] = strconv.FormatInt(in.Seq, 10)
	refs[refIntentHash] = in.Hash
	body := append([]byte(nil), in.Body[:len(in.Body)-1]...)
	body = fmt.Appendf(body, `,"intent":{"seq":%d,"hash":%q},"outcome":"unknown",`+
		`"error":{"kind":"unavailable","message":"the gateway stopped while the call ran, before recording its outcome: it may have taken effect; check before calling again","outcome":"unknown"}}`,
		in.Seq, in.Hash)
	return custody.Entry{At: at, Kind: custody.KindCallInterrupted, Trace: in.Trace, Actor: in.Actor, Refs: refs, Body: body}
}
