package peas_test

import (
	"strings"
	"testing"

	"github.com/custody-dev/custody"
	"github.com/custody-dev/custody/systems/llm"
	"github.com/custody-dev/custody/systems/peas"
)

// TestUnconfiguredChannelUnavailable: asking for the pager where no pager
// is configured is a channel that is unavailable, not an invalid call.
func TestUnconfiguredChannelUnavailable(t *testing.T) {
	s := newStack(t, llm.Router{})
	ch := s.pending(t)
	_, err := s.call(ch.Trace, peas.ToolApprove, `{"brief_id":"`+ch.BriefID+`","target_operator_id":"op","preferred_channel":"pager"}`)
	s.refusedOnLedger(t, err, custody.EUNAVAILABLE)
	if msg := custody.ErrorMessage(err); !strings.Contains(msg, `"pager"`) {
		t.Fatalf("refusal %q does not name the channel", msg)
	}
}
