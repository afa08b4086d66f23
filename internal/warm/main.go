package main
import (
 _ "modernc.org/sqlite"
 _ "github.com/santhosh-tekuri/jsonschema/v6"
 _ "github.com/modelcontextprotocol/go-sdk/mcp"
 _ "github.com/nats-io/nats.go"
 _ "github.com/nats-io/nats-server/v2/server"
 _ "github.com/chromedp/chromedp"
 _ "golang.org/x/text/unicode/norm"
)
func main(){}
