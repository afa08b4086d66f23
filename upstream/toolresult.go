package upstream

import (
	"encoding/json"
	"errors"
	"fmt"

	segjson "github.com/segmentio/encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolResult returns the result of a tools/call as the server sent it,
// when the SDK would decode it and its content is a list; another result
// the SDK decodes (one without content, say) is returned as the SDK
// encodes it again, as every result was before custody sent its calls
// itself; one the SDK would refuse is refused with its reason. A result
// that asks the client for input (multi round-trip) is errNeedsInput.
//
// Why: the SDK (v1.8) decodes a result with a JSON decoder that allocates
// a 32 KiB buffer for each value it decodes, twice per result, and then
// custody encoded it again. The decoding here is the SDK's own library
// with the SDK's own flags, into the SDK's wire shape, without the
// buffer. FuzzToolResult holds its verdict equal to the SDK's on every
// input, and TestRawCallMatchesSDK the results of the two paths.
func toolResult(out json.RawMessage) (json.RawMessage, error) {
	var r resultWire
	if err := decodeLikeSDK(out, &r); err != nil {
		return nil, err
	}
	if r.ResultType == inputRequired {
		return nil, errNeedsInput
	}
	if err := checkContents(r.Content, nil); err != nil {
		return nil, err
	}
	if r.Content != nil {
		return out, nil
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, err
	}
	return json.Marshal(&res)
}

// errNeedsInput: the result asks the client for input before the call
// can complete.
var errNeedsInput = errors.New("the server asks the client for input")

// inputRequired is the resultType of a result that asks for input.
const inputRequired = "input_required"

// resultWire is the shape the SDK decodes a CallToolResult from: its
// fields, with content in its wire form.
type resultWire struct {
	Meta              mcp.Meta            `json:"_meta,omitempty"`
	Content           []*contentWire      `json:"content"`
	StructuredContent any                 `json:"structuredContent,omitempty"`
	IsError           bool                `json:"isError,omitempty"`
	InputRequests     mcp.InputRequestMap `json:"inputRequests,omitempty"`
	RequestState      string              `json:"requestState,omitempty"`
	ResultType        string              `json:"resultType"`
}

// contentWire is the SDK's wire form of one content block, every type's
// fields together.
type contentWire struct {
	Type              string                `json:"type"`
	Text              string                `json:"text,omitempty"`
	MIMEType          string                `json:"mimeType,omitempty"`
	Data              []byte                `json:"data,omitempty"`
	Resource          *mcp.ResourceContents `json:"resource,omitempty"`
	URI               string                `json:"uri,omitempty"`
	Name              string                `json:"name,omitempty"`
	Title             string                `json:"title,omitempty"`
	Description       string                `json:"description,omitempty"`
	Size              *int64                `json:"size,omitempty"`
	Meta              mcp.Meta              `json:"_meta,omitempty"`
	Annotations       *mcp.Annotations      `json:"annotations,omitempty"`
	Icons             []mcp.Icon            `json:"icons,omitempty"`
	ID                string                `json:"id,omitempty"`
	Input             map[string]any        `json:"input,omitempty"`
	ToolUseID         string                `json:"toolUseId,omitempty"`
	NestedContent     []*contentWire        `json:"content,omitempty"`
	StructuredContent any                   `json:"structuredContent,omitempty"`
	IsError           bool                  `json:"isError,omitempty"`
}

// contentTypes are the content types a result may hold; nestedTypes
// those a tool_result block may.
var (
	contentTypes = map[string]bool{"text": true, "image": true, "audio": true, "resource_link": true,
		"resource": true, "tool_use": true, "tool_result": true}
	nestedTypes = map[string]bool{"text": true, "image": true, "audio": true, "resource_link": true, "resource": true}
)

// checkContents refuses the blocks the SDK refuses: a null one, one of
// an unknown type or one allow (nil for any) does not name.
func checkContents(blocks []*contentWire, allow map[string]bool) error {
	for _, b := range blocks {
		switch {
		case b == nil:
			return errors.New("nil content")
		case allow != nil && !allow[b.Type]:
			return fmt.Errorf("invalid content type %q", b.Type)
		case !contentTypes[b.Type]:
			return fmt.Errorf("unrecognized content type %q", b.Type)
		}
		if b.Type == "tool_result" && b.NestedContent != nil {
			if err := checkContents(b.NestedContent, nestedTypes); err != nil {
				return fmt.Errorf("tool_result nested content: %w", err)
			}
		}
	}
	return nil
}

// maxDepth is the deepest nesting of objects and arrays the SDK decodes.
const maxDepth = 1000

// decodeLikeSDK decodes data into v as the SDK does (its JSON library,
// struct fields matched by exact name, at most maxDepth deep, the first
// value of data), without a decoder of its own.
func decodeLikeSDK(data []byte, v any) error {
	if err := checkDepth(data); err != nil {
		return err
	}
	_, err := segjson.Parse(data, v, segjson.DontMatchCaseInsensitiveStructFields)
	return err
}

// checkDepth refuses data nested deeper than maxDepth, counting brackets
// outside strings as the SDK does.
func checkDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > maxDepth {
				return fmt.Errorf("json: exceeded maximum nesting depth of %d", maxDepth)
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}
