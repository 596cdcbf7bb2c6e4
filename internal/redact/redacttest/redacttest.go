// Package redacttest holds realistic samples of every credential
// pattern the redact package removes and the contexts a credential can be
// glued into, for tests that plant credentials and scan what was stored.
package redacttest

// Credential is one credential pattern as it is planted: Planted is the
// text written, Secret the part that must never survive redaction.
type Credential struct{ Name, Planted, Secret string }

// Credentials holds one realistic sample of every credential pattern;
// no sample's Secret occurs in another sample.
var Credentials = []Credential{
	{"aws", "AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"},
	{"google", "AIzaSyD9x7Qm2Lk4Vb8Nc1Rt6Wz3Hy5Jp0Fg-Ue", "AIzaSyD9x7Qm2Lk4Vb8Nc1Rt6Wz3Hy5Jp0Fg-Ue"},
	{"github", "ghp_R8mX2kQ9vL4nT7bW1cZ5yH3jF6gD0sA2eP8u", "R8mX2kQ9vL4nT7bW1cZ5yH3jF6gD0sA2eP8u"},
	{"github-fine", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopq", "11ABCDEFG0123456789_abcdefghijklmnopq"},
	{"slack", "xoxb-1234567890-Tq3Zp8Wd5Ks1Mv7N", "1234567890-Tq3Zp8Wd5Ks1Mv7N"},
	{"openai", "sk-proj-Hb4Rn9Lc2Xw7Pf5Jd8Qs1Vm6Kz3Ty0Ga", "Hb4Rn9Lc2Xw7Pf5Jd8Qs1Vm6Kz3Ty0Ga"},
	{"webcodex-pat", "wc_pat_64q4QhLE_1fri2gEU3r8gCERFCsbTtE3SDtmcEqZNSc", "64q4QhLE_1fri2gEU3r8gCERFCsbTtE3SDtmcEqZNSc"},
	{"webcodex-key", "wck_Ye6Fu2Io9Ah4Sd7G", "Ye6Fu2Io9Ah4Sd7G"},
	{"bearer", "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.Nc5Lw8Rj2Ue4", "eyJhbGciOiJIUzI1NiJ9"},
	{"basic", "Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA"},
	{"pem", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\n-----END PRIVATE KEY-----", "MIIEvQIBADANBgkqhkiG9w0B"},
	{"password", "password=hunter2Hunter2", "hunter2Hunter2"},
}

// Before is what may directly precede a credential: the start of the
// text, a word boundary, and each character that does not make one.
var Before = []struct{ Name, Text string }{
	{"start", ""}, {"space", "see "}, {"underscore", "x_"}, {"hyphen", "build-"}, {"dot", "v1."},
	{"slash", "path/"}, {"digit", "v7"}, {"lower", "x"}, {"upper", "X"},
}
