package mesh

import (
	"context"
	"strings"
)

// Msg is one message on a transport: the subject it was published on,
// its exact bytes, and the detached signature of those bytes (see
// Identity): the signer's public nkey and the base64url ed25519
// signature.
type Msg struct {
	Subject   string
	Data      []byte
	Signer    string
	Signature string
}

// Handler receives messages from a subscription. It is called from the
// transport's delivery goroutine: it must not block for long.
type Handler func(ctx context.Context, m Msg)

// Subscription is an active subscription.
type Subscription interface {
	// Unsubscribe stops delivery; handlers running may still finish.
	Unsubscribe() error
}

// Transport carries mesh messages between nodes, aggregators and desks.
// Subjects are dot-separated tokens; a subscription may use "*" for one
// token and a final ">" for the rest, as in NATS.
type Transport interface {
	// Publish sends m, with its signature, on m.Subject. A nil error
	// means the transport accepted the message; with a durable transport
	// it means the message is stored and will survive a restart of the
	// transport.
	Publish(ctx context.Context, m Msg) error
	// Subscribe delivers every message on subjects matching pattern to h.
	Subscribe(pattern string, h Handler) (Subscription, error)
	// Close releases the transport.
	Close() error
}

// Subjects names the subjects of one mesh under a prefix (default "mesh"),
// so that several meshes share a server without seeing each other.
type Subjects struct {
	Prefix string
}

func (s Subjects) prefix() string {
	if s.Prefix == "" {
		return "mesh"
	}
	return s.Prefix
}

// Advisory returns the subject a node publishes its advisories on.
func (s Subjects) Advisory(node string) string { return s.prefix() + ".advisory." + node }

// Aggregation returns the subject of the aggregations of one sector.
func (s Subjects) Aggregation(sector string) string { return s.prefix() + ".aggregation." + sector }

// Broadcast returns the subject of the broadcasts to one audience.
func (s Subjects) Broadcast(audience string) string { return s.prefix() + ".broadcast." + audience }

// Advisories, Aggregations and Broadcasts return the patterns matching
// every subject of their kind.
func (s Subjects) Advisories() string   { return s.prefix() + ".advisory.*" }
func (s Subjects) Aggregations() string { return s.prefix() + ".aggregation.*" }
func (s Subjects) Broadcasts() string   { return s.prefix() + ".broadcast.*" }

// lastToken returns the last dot-separated token of subject.
func lastToken(subject string) string {
	return subject[strings.LastIndexByte(subject, '.')+1:]
}

// matchSubject reports whether subject matches pattern, with "*" matching
// one token and a final ">" matching one or more.
func matchSubject(pattern, subject string) bool {
	for {
		pt, prest, pmore := strings.Cut(pattern, ".")
		st, srest, smore := strings.Cut(subject, ".")
		switch {
		case pt == ">" && !pmore:
			return st != ""
		case pt != "*" && pt != st:
			return false
		case !pmore || !smore:
			return pmore == smore
		}
		pattern, subject = prest, srest
	}
}
