package peas

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/gate"
	"github.com/custody-dev/custody/systems/agent"
)

// CorridorStatus is what the console shows of a corridor: its latest
// window, signature, brief and where its chain stands.
type CorridorStatus struct {
	Corridor
	Window    *Window    `json:"window,omitempty"`
	Chain     *Chain     `json:"chain,omitempty"`
	Signature *Signature `json:"signature,omitempty"`
	Brief     *Brief     `json:"brief,omitempty"`
	UpdatedAt string     `json:"updated_at"`
}

// saveCorridor records where a corridor's chain stands.
func (s *System) saveCorridor(ctx context.Context, ch *Chain) error {
	st := CorridorStatus{UpdatedAt: custody.FormatTime(s.now())}
	var old CorridorStatus
	if err := s.getDoc(ctx, NSCorridors, ch.LocationID, "corridor", &old); err == nil {
		st.Window = old.Window
	}
	st.Corridor, _ = s.corridor(ch.LocationID)
	st.Chain = ch
	if ch.SignatureID != "" {
		var rec signatureRecord
		if s.getDoc(ctx, NSSignatures, ch.SignatureID, "signature", &rec) == nil {
			st.Signature = &rec.Signature
		}
	}
	if ch.BriefID != "" {
		var b Brief
		if s.getDoc(ctx, NSBriefs, ch.BriefID, "brief", &b) == nil {
			st.Brief = &b
		}
	}
	return s.putDoc(ctx, NSCorridors, ch.LocationID, st)
}

// saveWindow records the window a corridor's feed just delivered.
func (s *System) saveWindow(ctx context.Context, c Corridor, w Window) error {
	var st CorridorStatus
	if err := s.getDoc(ctx, NSCorridors, c.LocationID, "corridor", &st); err != nil && custody.ErrorKind(err) != custody.ENOTFOUND {
		return err
	}
	st.Corridor, st.Window, st.UpdatedAt = c, &w, custody.FormatTime(s.now())
	return s.putDoc(ctx, NSCorridors, c.LocationID, st)
}

// Run is the live corridor feed: every Interval it delivers each
// corridor's next sensor window and runs the chain on it through the agent
// loop, up to the operator's approval; a corridor whose chain waits for its
// approval holds its feed until the decision, then the chain goes on. It
// returns nil when ctx ends.
func (s *System) Run(ctx context.Context, gw *gate.Gateway) error {
	return s.run(ctx, gw)
}

func (s *System) run(ctx context.Context, gw agent.Gateway) error {
	next := make(map[string]int, len(s.d.Corridors))
	open := map[string]*Chain{}
	tick := time.NewTicker(s.d.Interval)
	defer tick.Stop()
	for {
		for _, c := range s.d.Corridors {
			s.step(ctx, gw, c, next, open)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// step advances one corridor: continue its open chain, or feed its next
// window. Failures are logged: one corridor's trouble never stops the feed.
func (s *System) step(ctx context.Context, gw agent.Gateway, c Corridor, next map[string]int, open map[string]*Chain) {
	log := s.d.Logger.With("location_id", c.LocationID)
	if ch := open[c.LocationID]; ch != nil {
		if err := s.Continue(ctx, gw, ch); err != nil {
			log.Error("continue chain", "err", err)
		}
		if ch.Stage == StagePending {
			return
		}
		delete(open, c.LocationID)
	}
	ws := Scenario(c.Scenario)
	i := next[c.LocationID]
	if i >= len(ws) {
		return
	}
	next[c.LocationID] = i + 1
	if err := s.saveWindow(ctx, c, ws[i]); err != nil {
		log.Error("record sensor window", "err", err)
	}
	ch, err := s.Start(ctx, gw, c.LocationID, ws[i].Readings)
	if err != nil {
		log.Error("run chain", "err", err)
		return
	}
	log.Info("chain ran", "stage", ch.Stage, "severity", ch.Severity, "trace", ch.Trace)
	if ch.Stage == StagePending {
		open[c.LocationID] = ch
	}
}

// Corridors returns the status of every corridor, in corridor order.
func (s *System) Corridors(ctx context.Context) ([]CorridorStatus, error) {
	out := make([]CorridorStatus, 0, len(s.d.Corridors))
	for _, c := range s.d.Corridors {
		var st CorridorStatus
		err := s.getDoc(ctx, NSCorridors, c.LocationID, "corridor", &st)
		if custody.ErrorKind(err) == custody.ENOTFOUND {
			st = CorridorStatus{Corridor: c}
		} else if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// Notifications returns the in-car warnings delivered, newest first.
func (s *System) Notifications(ctx context.Context) ([]Notification, error) {
	var out []Notification
	err := s.listDocs(ctx, NSNotifications, func(_ string, raw json.RawMessage) error {
		var n Notification
		if err := json.Unmarshal(raw, &n); err != nil {
			return err
		}
		out = append(out, n)
		return nil
	})
	slices.SortFunc(out, func(a, b Notification) int { return strings.Compare(b.DeliveredAt, a.DeliveredAt) })
	return out, err
}
