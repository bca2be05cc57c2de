package main

import "strings"

// vocabulary is the generated text's words, most frequent first: English function
// words, then the words of coding sessions, then a long tail of rarer words (a
// selective query's). "zanzibar" is in the tail; "error" and "timeout" in the middle.
func vocabulary() []string {
	common := strings.Fields(`the to of and a in is it you that for on with this be
		are as can not have we if will was or at by from an but so your do my all one
		file function test code run error use add change need should check return value
		line build new data server type now let update output make fix first then also
		config go just import string here request message when see like which get set
		call response list name path time query table version more package field result
		log module need case into status user there may because only what each it's
		using database commit branch failed works update read write look found missing
		timeout deploy handler method struct interface pointer nil context channel loop
		index schema migration column row cursor page limit token model prompt stream`)
	mid := strings.Fields(`async await promise docker kubernetes cluster pod container
		image volume secret env variable flag argument option default parse encode decode
		json yaml toml csv html css javascript typescript python rust golang java ruby
		compile linker panic stack trace goroutine mutex lock race deadlock retry backoff
		cache redis postgres sqlite index vacuum analyze explain plan join subquery trigger
		webhook endpoint route middleware auth jwt oauth session cookie header body status
		latency throughput benchmark profile memory allocation garbage heap leak metric
		grafana prometheus alert dashboard incident rollback release tag changelog readme
		refactor rename extract inline delete remove revert merge rebase conflict diff patch
		review approve comment issue ticket sprint estimate deadline meeting standup demo`)
	var tail []string
	// Rare words: syllable combinations, a few thousand of them.
	syll := strings.Fields("ka ze ri mo tu la ven dor quin pax lum sor tri bel gan fio")
	for _, a := range syll {
		for _, b := range syll {
			for _, c := range syll {
				tail = append(tail, a+b+c)
			}
		}
	}
	out := append(append(common, mid...), tail...)
	// A rare, real word near the end.
	out[len(out)-100] = "zanzibar"
	return out
}
