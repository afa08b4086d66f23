package brain

import (
	"html/template"
	"net/http"

	"github.com/custody-dev/custody"
)

// pageTemplate is the room overview and the review queue.
var pageTemplate = template.Must(template.New("room").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Brain room</title></head><body>
<h1>Room {{.Path}}</h1>
<p>Stage {{.Stage}} · {{.Nodes}} nodes · {{.Edges}} edges · {{.Events}} memory events</p>
{{with .Message}}<p role="status">{{.}}</p>{{end}}
<h2>Review queue</h2>
{{if not .Proposals}}<p>Nothing waits for review.</p>{{end}}
<ul>{{range .Proposals}}
<li><strong>{{.ID}}</strong> ({{.Type}}, by {{.CreatedBy}}): {{.Summary}}
<form method="post"><input type="hidden" name="id" value="{{.ID}}">
<label>User <input name="user" required></label>
<button name="action" value="confirm">Confirm</button>
<button name="action" value="reject">Reject</button></form></li>
{{end}}</ul></body></html>`))

// proposalView is one row of the review queue.
type proposalView struct {
	ID, Type, CreatedBy, Summary string
}

type pageView struct {
	Path, Stage, Message string
	Nodes, Edges, Events int
	Proposals            []proposalView
}

// Handler serves a room overview and its review queue: GET shows them,
// POST (id, action confirm|reject, user) decides one proposal in the name
// of the user given. Mount it behind the operator role; it trusts its
// caller to have checked who may review.
func Handler(r *Room) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		msg := ""
		switch req.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPost:
			msg = decide(r, req)
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		view, err := overview(r, req, msg)
		if err != nil {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		pageTemplate.Execute(w, view)
	})
}

// decide applies one review and returns what to tell the user.
func decide(r *Room, req *http.Request) string {
	id, user := req.PostFormValue("id"), req.PostFormValue("user")
	var err error
	switch req.PostFormValue("action") {
	case "confirm":
		_, err = r.Confirm(req.Context(), id, user)
	case "reject":
		_, err = r.Reject(req.Context(), id, user)
	default:
		err = custody.Errorf(custody.EINVALID, "action must be confirm or reject")
	}
	if err != nil {
		return "Not done: " + custody.ErrorMessage(err)
	}
	return id + ": " + req.PostFormValue("action") + "ed by " + user
}

func overview(r *Room, req *http.Request, msg string) (pageView, error) {
	ctx := req.Context()
	v := pageView{Path: r.Path(), Message: msg}
	var err error
	if v.Nodes, v.Edges, v.Events, err = r.Counts(ctx); err != nil {
		return v, err
	}
	cfg, err := r.Config(ctx)
	if err != nil {
		return v, err
	}
	v.Stage = cfgStage(cfg)
	ps, err := r.Proposals(ctx)
	for _, p := range ps {
		v.Proposals = append(v.Proposals, proposalView{ID: p.ID, Type: p.Type, CreatedBy: p.CreatedBy,
			Summary: summaryOf(p.Properties)})
	}
	return v, err
}

func cfgStage(c Config) string {
	if c.Stage == "" {
		return defaultStage
	}
	return c.Stage
}
