// Package natsmesh carries mesh messages over NATS. Advisories, whose
// latest per node is what matters, go to a JetStream stream that keeps the
// last message of every subject, so an aggregator that restarts gets the
// latest advisory of every node at once. Aggregations and broadcasts go to
// a stream that keeps every message, read through durable consumers, so a
// desk or an audience that restarts receives what it missed.
package natsmesh

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/mesh"
)

// Config configures a NATS transport.
type Config struct {
	// URL of the NATS server, e.g. nats://127.0.0.1:4222.
	URL string
	// Name names the connection.
	Name string
	// Subjects is the mesh's subject prefix; streams are named after it.
	Subjects mesh.Subjects
	// Durable names this participant's durable consumers. Empty means
	// ephemeral consumers that see only new aggregations and broadcasts.
	Durable string
	// Retain is how long the streams keep messages; default 24 h.
	Retain time.Duration
}

// Transport is a mesh.Transport on NATS JetStream.
type Transport struct {
	cfg  Config
	nc   *nats.Conn
	js   jetstream.JetStream
	mu   sync.Mutex
	subs []jetstream.ConsumeContext
}

var _ mesh.Transport = (*Transport)(nil)

// Dial connects to the server and makes sure the mesh's streams exist.
// It returns EUNAVAILABLE when the server cannot be reached.
func Dial(ctx context.Context, cfg Config) (*Transport, error) {
	if cfg.Retain <= 0 {
		cfg.Retain = 24 * time.Hour
	}
	nc, err := nats.Connect(cfg.URL, nats.Name(cfg.Name), nats.MaxReconnects(-1))
	if err != nil {
		return nil, unavailable("connect to NATS at "+cfg.URL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, unavailable("open JetStream", err)
	}
	t := &Transport{cfg: cfg, nc: nc, js: js}
	if err := t.ensureStreams(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return t, nil
}

func unavailable(what string, err error) error {
	return &custody.Error{Kind: custody.EUNAVAILABLE, Message: what + " failed", Err: err}
}

// streamNames returns the advisory and message stream names.
func (t *Transport) streamNames() (string, string) {
	base := strings.ToUpper(strings.NewReplacer(".", "_", "*", "_", ">", "_").Replace(t.prefix()))
	return base + "_ADVISORIES", base + "_MESSAGES"
}

func (t *Transport) prefix() string {
	if t.cfg.Subjects.Prefix == "" {
		return "mesh"
	}
	return t.cfg.Subjects.Prefix
}

func (t *Transport) ensureStreams(ctx context.Context) error {
	adv, msgs := t.streamNames()
	p := t.prefix()
	cfgs := []jetstream.StreamConfig{
		{Name: adv, Subjects: []string{p + ".advisory.>"}, MaxMsgsPerSubject: 1, MaxAge: t.cfg.Retain, Storage: jetstream.FileStorage},
		{Name: msgs, Subjects: []string{p + ".aggregation.>", p + ".broadcast.>"}, MaxAge: t.cfg.Retain, Storage: jetstream.FileStorage},
	}
	for _, c := range cfgs {
		if _, err := t.js.CreateOrUpdateStream(ctx, c); err != nil {
			return unavailable("create stream "+c.Name, err)
		}
	}
	return nil
}

// Publish stores m on its subject, its signature in the headers
// mesh.SignerHeader and mesh.SignatureHeader and its bytes as the
// message data: nil means the server acknowledged it.
func (t *Transport) Publish(ctx context.Context, m mesh.Msg) error {
	msg := nats.NewMsg(m.Subject)
	msg.Data = m.Data
	if m.Signer != "" {
		msg.Header.Set(mesh.SignerHeader, m.Signer)
	}
	if m.Signature != "" {
		msg.Header.Set(mesh.SignatureHeader, m.Signature)
	}
	if _, err := t.js.PublishMsg(ctx, msg); err != nil {
		return unavailable("publish on "+m.Subject, err)
	}
	return nil
}

// Subscribe delivers the messages matching pattern to h. For advisories
// it starts with the latest advisory of every node; for aggregations and
// broadcasts it resumes a durable consumer when Config.Durable is set.
func (t *Transport) Subscribe(pattern string, h mesh.Handler) (mesh.Subscription, error) {
	ctx := context.Background()
	cons, err := t.consumer(ctx, pattern)
	if err != nil {
		return nil, err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		h(ctx, msgOf(m))
		_ = m.Ack()
	})
	if err != nil {
		return nil, unavailable("consume "+pattern, err)
	}
	t.mu.Lock()
	t.subs = append(t.subs, cc)
	t.mu.Unlock()
	return stopper{cc}, nil
}

// msgOf returns the mesh message of a JetStream message: its subject,
// data and the signature headers.
func msgOf(m jetstream.Msg) mesh.Msg {
	out := mesh.Msg{Subject: m.Subject(), Data: m.Data()}
	if h := m.Headers(); h != nil {
		out.Signer, out.Signature = h.Get(mesh.SignerHeader), h.Get(mesh.SignatureHeader)
	}
	return out
}

func (t *Transport) consumer(ctx context.Context, pattern string) (jetstream.Consumer, error) {
	adv, msgs := t.streamNames()
	if strings.HasPrefix(pattern, t.prefix()+".advisory.") {
		c, err := t.js.OrderedConsumer(ctx, adv, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{pattern}, DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy,
		})
		if err != nil {
			return nil, unavailable("advisory consumer", err)
		}
		return c, nil
	}
	if t.cfg.Durable == "" {
		c, err := t.js.OrderedConsumer(ctx, msgs, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{pattern}, DeliverPolicy: jetstream.DeliverNewPolicy,
		})
		if err != nil {
			return nil, unavailable("message consumer", err)
		}
		return c, nil
	}
	c, err := t.js.CreateOrUpdateConsumer(ctx, msgs, jetstream.ConsumerConfig{
		Durable: durableName(t.cfg.Durable, pattern), FilterSubject: pattern,
		AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, unavailable("durable consumer", err)
	}
	return c, nil
}

// durableName derives a valid consumer name from the participant and the
// pattern it follows.
func durableName(durable, pattern string) string {
	sum := sha256.Sum256([]byte(pattern))
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, durable)
	return fmt.Sprintf("%s-%s", clean, hex.EncodeToString(sum[:6]))
}

type stopper struct{ cc jetstream.ConsumeContext }

func (s stopper) Unsubscribe() error {
	s.cc.Stop()
	return nil
}

// Close stops every subscription and drains the connection.
func (t *Transport) Close() error {
	t.mu.Lock()
	subs := t.subs
	t.subs = nil
	t.mu.Unlock()
	for _, cc := range subs {
		cc.Stop()
	}
	if err := t.nc.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return fmt.Errorf("drain NATS connection: %w", err)
	}
	return nil
}

// Join dials the mesh at url under the subject prefix, its durable
// consumer (and connection name) durable: mesh.Plugin's NATS.
func Join(ctx context.Context, url, prefix, durable string) (mesh.Transport, error) {
	return Dial(ctx, Config{URL: url, Name: durable, Subjects: mesh.Subjects{Prefix: prefix}, Durable: durable})
}
