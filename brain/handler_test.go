package brain

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestHandlerReviewQueue(t *testing.T) {
	r := exampleRoom(t)
	ctx := context.Background()
	if _, err := r.Ingest(ctx, "suggest_next_move", "claim-core", Response{Suggestions: []Suggestion{suggestion(0, "Resolve <b>now</b>", nil)}}); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(Handler(r))
	defer ts.Close()
	id := "brain_insight:suggest_next_move:0"
	tests := []struct {
		name   string
		form   url.Values
		status int
		want   string
	}{
		{"List", nil, 200, "Resolve &lt;b&gt;now&lt;/b&gt;"},
		{"ErrNoUser", url.Values{"id": {id}, "action": {"confirm"}}, 200, "Not done: a review needs a named user"},
		{"ErrBadAction", url.Values{"id": {id}, "action": {"approve"}, "user": {"maya"}}, 200, "Not done: action must be"},
		{"Confirm", url.Values{"id": {id}, "action": {"confirm"}, "user": {"maya"}}, 200, "confirmed by maya"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var res *http.Response
			var err error
			if tt.form == nil {
				res, err = http.Get(ts.URL)
			} else {
				res, err = http.PostForm(ts.URL, tt.form)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tt.status || !strings.Contains(string(body), tt.want) {
				t.Fatalf("status %d, body lacks %q:\n%s", res.StatusCode, tt.want, body)
			}
		})
	}
	if n, _ := r.Node(ctx, id); n.ReviewStatus != statusConfirmed || n.ConfirmedBy != "maya" {
		t.Fatalf("node %+v", n)
	}
}
