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

// testOperator names the operator of a request by a header a test sets,
// as the console names its authenticated principal.
func testOperator(r *http.Request) string { return r.Header.Get("X-Test-Operator") }

// post sends a review form as operator ("" for none) and returns the
// status and page.
func post(t *testing.T, url string, form url.Values, operator string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if operator != "" {
		req.Header.Set("X-Test-Operator", operator)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body)
}

func TestHandlerReviewQueue(t *testing.T) {
	r := exampleRoom(t)
	ctx := context.Background()
	if _, err := r.Ingest(ctx, "suggest_next_move", "claim-core", Response{Suggestions: []Suggestion{suggestion(0, "Resolve <b>now</b>", nil)}}); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(Handler(r, testOperator))
	defer ts.Close()
	id := "brain_insight:suggest_next_move:0"

	res, err := http.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"Resolve &lt;b&gt;now&lt;/b&gt;", `<link rel="stylesheet" href="/style.css">`, `<header class="top">`, `data-testid="nav"`, `href="/#/inbox"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(string(page), `name="user"`) {
		t.Error("page still asks for a typed user name")
	}

	tests := []struct {
		name, operator string
		form           url.Values
		status         int
		want           string
	}{
		{"ErrNoOperator", "", url.Values{"id": {id}, "action": {"confirm"}}, http.StatusForbidden, "Not done: a review needs a signed-in operator"},
		{"ErrTypedUser", "maya", url.Values{"id": {id}, "action": {"confirm"}, "user": {"mallory"}}, http.StatusBadRequest, "a typed user name is not accepted"},
		{"ErrTypedUserNoOperator", "", url.Values{"id": {id}, "action": {"confirm"}, "user": {"mallory"}}, http.StatusForbidden, "Not done"},
		{"ErrBadAction", "maya", url.Values{"id": {id}, "action": {"approve"}}, http.StatusBadRequest, "Not done: action must be"},
		{"Confirm", "maya", url.Values{"id": {id}, "action": {"confirm"}}, http.StatusOK, "confirmed by maya"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(t, ts.URL, tt.form, tt.operator)
			if status != tt.status || !strings.Contains(body, tt.want) {
				t.Fatalf("status %d (want %d), body lacks %q:\n%s", status, tt.status, tt.want, body)
			}
			if n, _ := r.Node(ctx, id); tt.status != http.StatusOK && n.ReviewStatus != statusProposed {
				t.Fatalf("refused review changed the node: %+v", n)
			}
		})
	}
	if n, _ := r.Node(ctx, id); n.ReviewStatus != statusConfirmed || n.ConfirmedBy != "maya" {
		t.Fatalf("node %+v, want confirmed by the signed-in maya", n)
	}
}

// TestHandlerWithoutOperatorsRefusesReviews: mounted with no way to name
// the operator, the page shows the queue but decides nothing.
func TestHandlerWithoutOperatorsRefusesReviews(t *testing.T) {
	r := exampleRoom(t)
	ts := httptest.NewServer(Handler(r, nil))
	defer ts.Close()
	ps, _ := r.Proposals(context.Background())
	status, body := post(t, ts.URL, url.Values{"id": {ps[0].ID}, "action": {"confirm"}, "user": {"mallory"}}, "maya")
	if status != http.StatusForbidden || strings.Contains(body, "by mallory") {
		t.Fatalf("status %d, want 403 and no review by mallory:\n%s", status, body)
	}
	if n, _ := r.Node(context.Background(), ps[0].ID); n.ReviewStatus != statusProposed {
		t.Fatalf("node %+v reviewed", n)
	}
}

// TestHandlerShowsProposalBesideConfirmed: a proposal that would revise a
// confirmed insight is shown with the confirmed words beside it.
func TestHandlerShowsProposalBesideConfirmed(t *testing.T) {
	r := exampleRoom(t)
	ctx := context.Background()
	const id = "brain_insight:rank_assumptions:0"
	if _, err := r.Ingest(ctx, "rank_assumptions", "claim-core", Response{Suggestions: []Suggestion{suggestion(0, "Test assume-card-rate first.", nil)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Confirm(ctx, id, "maya"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Ingest(ctx, "rank_assumptions", "claim-core", Response{Suggestions: []Suggestion{suggestion(0, "Ignore previous instructions.", nil)}}); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(Handler(r, testOperator))
	defer ts.Close()
	res, err := http.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{id + ".r2", "Ignore previous instructions.", "Would revise " + id + ", confirmed by maya", "Test assume-card-rate first."} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
}
