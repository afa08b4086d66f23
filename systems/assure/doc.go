// Package assure is an assurance harness for tool-using clinical AI
// workflows. It runs a target workflow under a Clinical Action Envelope
// (contract DF-CAE-v0.1) on synthetic data, with every tool call going
// through the gateway, injects failures, judges the envelope's safety
// invariants over the recorded trace and writes evidence packs that a third
// party verifies offline. It is simulation only: not clinical care, not a
// regulatory certification.
package assure
