package peas

import "encoding/json"

// Corridor is a monitored stretch of highway: its sensor location, the
// variable message sign upstream of it and the in-vehicle devices in range.
type Corridor struct {
	LocationID string   `json:"location_id"`
	Name       string   `json:"name"`
	Billboard  string   `json:"billboard_id"`
	Vehicles   []string `json:"vehicle_ids"`
	// Scenario names the feed replayed for this corridor.
	Scenario string `json:"scenario"`
}

// Window is one sensor window of a scenario.
type Window struct {
	// Minute is the window's offset into the scenario.
	Minute   int             `json:"minute"`
	Readings json.RawMessage `json:"sensor_readings"`
}

// Scenario names.
const (
	ScenarioCalm     = "calm"
	ScenarioFog      = "fog"
	ScenarioWhiteout = "whiteout"
)

// DefaultCorridors returns the simulated corridors: a calm day, fog at
// speed, and a reconstruction of a lake-effect whiteout.
func DefaultCorridors() []Corridor {
	return []Corridor{
		{LocationID: "I-94:MM88-EB", Name: "I-94 eastbound near Galesburg, Michigan", Billboard: "I-94:VMS:MM85-EB",
			Vehicles: []string{"veh-0417", "veh-2231", "veh-3090"}, Scenario: ScenarioWhiteout},
		{LocationID: "I-80:MM310-WB", Name: "I-80 westbound, river valley", Billboard: "I-80:VMS:MM312-WB",
			Vehicles: []string{"veh-5120", "veh-6002"}, Scenario: ScenarioFog},
		{LocationID: "US-131:MM40-NB", Name: "US-131 northbound, open country", Billboard: "US-131:VMS:MM38-NB",
			Vehicles: []string{"veh-7788"}, Scenario: ScenarioCalm},
	}
}

// Scenario returns the sensor windows of a named scenario, in order. An
// unknown name has no windows.
func Scenario(name string) []Window {
	switch name {
	case ScenarioCalm:
		return windows(
			`{"crash_density_per_min":0,"visibility_ft":10560,"ambient_temp_f":58,"precipitation_type":"none","traffic_speed_mph":68,"wind_mph":6}`,
			`{"crash_density_per_min":0.05,"visibility_ft":9800,"ambient_temp_f":60,"precipitation_type":"none","traffic_speed_mph":66,"wind_mph":8}`,
		)
	case ScenarioFog:
		return windows(
			`{"crash_density_per_min":0,"visibility_ft":2400,"ambient_temp_f":44,"precipitation_type":"fog","traffic_speed_mph":71,"wind_mph":3}`,
			`{"crash_density_per_min":0.1,"visibility_ft":420,"ambient_temp_f":43,"precipitation_type":"fog","traffic_speed_mph":70,"wind_mph":2}`,
		)
	case ScenarioWhiteout:
		return windows(
			`{"crash_density_per_min":0,"visibility_ft":5200,"ambient_temp_f":30,"precipitation_type":"snow","traffic_speed_mph":67,"wind_mph":14}`,
			`{"crash_density_per_min":0.2,"visibility_ft":900,"ambient_temp_f":27,"precipitation_type":"snow","traffic_speed_mph":62,"wind_mph":28}`,
			`{"crash_density_per_min":1.4,"visibility_ft":150,"ambient_temp_f":24,"precipitation_type":"snow","traffic_speed_mph":55,"wind_mph":38}`,
		)
	}
	return nil
}

func windows(readings ...string) []Window {
	out := make([]Window, len(readings))
	for i, r := range readings {
		out[i] = Window{Minute: i * 5, Readings: json.RawMessage(r)}
	}
	return out
}

// corridor returns the corridor at location id.
func (s *System) corridor(id string) (Corridor, bool) {
	for _, c := range s.d.Corridors {
		if c.LocationID == id {
			return c, true
		}
	}
	return Corridor{}, false
}
