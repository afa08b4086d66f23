package telemetry_test

import (
	"testing"

	"github.com/custody-dev/custody/telemetry"
)

func TestEndpoint(t *testing.T) {
	tests := []struct {
		name, explicit, traces, base string
		want                         string
		err                          bool
	}{
		{name: "None"},
		{name: "Explicit", explicit: "http://collector:4318", want: "http://collector:4318/v1/traces"},
		{name: "ExplicitSlash", explicit: "https://collector:4318/", want: "https://collector:4318/v1/traces"},
		{name: "ExplicitFull", explicit: "http://collector:4318/v1/traces", want: "http://collector:4318/v1/traces"},
		{name: "ExplicitPrefix", explicit: "http://gw/otlp", want: "http://gw/otlp/v1/traces"},
		{name: "ExplicitWins", explicit: "http://a:1", base: "http://b:2", want: "http://a:1/v1/traces"},
		{name: "ExplicitNoScheme", explicit: "localhost:4318", err: true},
		{name: "Base", base: "http://b:4318", want: "http://b:4318/v1/traces"},
		{name: "TracesAsIs", traces: "http://t:4318/custom", base: "http://b:4318", want: "http://t:4318/custom"},
		{name: "TracesNoPath", traces: "http://t:4318", want: "http://t:4318/"},
		{name: "TracesBad", traces: "ftp://t", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{telemetry.EnvTracesEndpoint: tt.traces, telemetry.EnvEndpoint: tt.base}
			got, err := telemetry.Endpoint(tt.explicit, func(k string) string { return env[k] })
			if (err != nil) != tt.err || got != tt.want {
				t.Fatalf("Endpoint(%q) = %q, %v; want %q, error %v", tt.explicit, got, err, tt.want, tt.err)
			}
		})
	}
}
