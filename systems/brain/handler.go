package brain

import (
	"context"
	"encoding/json"
	"html/template"
	"net/http"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/httpjson"
)

// pageTemplate is the room overview and the review queue, in the console's
// style: its stylesheet, its header and its navigation.
var pageTemplate = template.Must(template.New("room").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Brain room · custody</title>
<link rel="icon" href="/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/style.css"></head><body>
<header class="top">
  <a class="brand" href="/#/inbox" aria-label="custody home"><img src="/icon.svg" alt="" width="28" height="28"><span>custody</span></a>
  <nav aria-label="Main" data-testid="nav">
    <a href="/#/inbox">Inbox</a>
    <a href="/#/ledger">Ledger</a>
    <a href="./" aria-current="page">Brain room</a>
  </nav>
  <div class="who"><span data-testid="principal">{{if .Operator}}{{.Operator}}{{else}}not signed in as an operator{{end}}</span></div>
</header>
<main>
<h1>Room {{.Path}}</h1>
<p class="muted">Stage {{.Stage}} · {{.Nodes}} nodes · {{.Edges}} edges · {{.Events}} memory events</p>
{{with .Message}}<p class="banner{{if $.Failed}} error{{else}} ok{{end}}" role="status" data-testid="review-status">{{.}}</p>{{end}}
<h2>Review queue</h2>
{{if not .Proposals}}<p class="muted">Nothing waits for review.</p>{{end}}
<ul class="cards" data-testid="proposals">{{range .Proposals}}
<li class="card"><div class="card-head"><h3>{{.ID}}</h3><span class="meta">{{.Type}}, by {{.CreatedBy}}</span></div>
<p class="reason">{{.Summary}}</p>
{{with .Beside}}<div class="context" data-testid="beside"><p class="muted">Would revise {{.ID}}, {{.Status}}{{with .By}} by {{.}}{{end}}, which stays as it is:</p>
<p>{{.Summary}}</p></div>{{end}}
<form method="post" class="buttons"><input type="hidden" name="id" value="{{.ID}}">
<button class="primary" name="action" value="confirm"{{if not $.Operator}} disabled{{end}}>Confirm</button>
<button class="danger" name="action" value="reject"{{if not $.Operator}} disabled{{end}}>Reject</button></form></li>
{{end}}</ul></main></body></html>`))

// proposalView is one row of the review queue.
type proposalView struct {
	ID, Type, CreatedBy, Summary string
	// Beside is the reviewed insight the proposal would revise, shown
	// beside it; nil when it revises none.
	Beside *besideView
}

// besideView is a reviewed insight as the review queue shows it.
type besideView struct {
	ID, Status, By, Summary string
}

type pageView struct {
	Path, Stage, Message, Operator string
	Failed                         bool
	Nodes, Edges, Events           int
	Proposals                      []proposalView
}

// Handler serves a room overview and its review queue: GET shows them,
// POST (id, action confirm|reject) decides one proposal in the name of the
// operator operatorOf names for the request: the authenticated principal,
// never a name typed into the form. A POST without an operator (nil
// operatorOf, or one that names nobody) or with a typed user is refused.
// Mount it behind the operator role.
func Handler(r *Room, operatorOf func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		operator := ""
		if operatorOf != nil {
			operator = operatorOf(req)
		}
		view := pageView{Operator: operator}
		status := http.StatusOK
		switch req.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPost:
			var err error
			view.Message, err = decide(r, req, operator)
			if err != nil {
				view.Failed, view.Message = true, "Not done: "+custody.ErrorMessage(err)
				status = httpjson.Status(custody.ErrorKind(err))
			}
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if err := overview(req.Context(), r, &view); err != nil {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		pageTemplate.Execute(w, view)
	})
}

// decide applies one review in the name of operator and returns what to
// tell them.
func decide(r *Room, req *http.Request, operator string) (string, error) {
	if operator == "" {
		return "", custody.Errorf(custody.EDENIED, "a review needs a signed-in operator")
	}
	if err := req.ParseForm(); err != nil {
		return "", custody.Errorf(custody.EINVALID, "the review form does not parse: %v", err)
	}
	if _, typed := req.PostForm["user"]; typed {
		return "", custody.Errorf(custody.EINVALID, "the reviewer is the signed-in operator; a typed user name is not accepted")
	}
	id, action := req.PostFormValue("id"), req.PostFormValue("action")
	var err error
	switch action {
	case "confirm":
		_, err = r.Confirm(req.Context(), id, operator)
	case "reject":
		_, err = r.Reject(req.Context(), id, operator)
	default:
		err = custody.Errorf(custody.EINVALID, "action must be confirm or reject")
	}
	if err != nil {
		return "", err
	}
	return id + ": " + action + "ed by " + operator, nil
}

// overview fills the room's counts, stage and review queue into v.
func overview(ctx context.Context, r *Room, v *pageView) error {
	v.Path = r.Path()
	var err error
	if v.Nodes, v.Edges, v.Events, err = r.Counts(ctx); err != nil {
		return err
	}
	cfg, err := r.Config(ctx)
	if err != nil {
		return err
	}
	v.Stage = cfgStage(cfg)
	ps, err := r.Proposals(ctx)
	if err != nil {
		return err
	}
	for _, p := range ps {
		pv := proposalView{ID: p.ID, Type: p.Type, CreatedBy: p.CreatedBy, Summary: summaryOf(p.Properties)}
		if pv.Beside, err = beside(ctx, r, p); err != nil {
			return err
		}
		v.Proposals = append(v.Proposals, pv)
	}
	return nil
}

// beside returns the reviewed insight proposal p would revise, or nil.
func beside(ctx context.Context, r *Room, p Node) (*besideView, error) {
	var props insightProps
	if json.Unmarshal(p.Properties, &props) != nil || props.Beside == "" {
		return nil, nil
	}
	n, err := r.Node(ctx, props.Beside)
	if custody.ErrorKind(err) == custody.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &besideView{ID: n.ID, Status: n.ReviewStatus, By: n.ConfirmedBy, Summary: summaryOf(n.Properties)}, nil
}

func cfgStage(c Config) string {
	if c.Stage == "" {
		return defaultStage
	}
	return c.Stage
}
