package graph

import "github.com/parley-dev/parley"

var errNoProcessing = &parley.Error{Code: parley.EUNAVAILABLE, Message: "Processing is not available on this server."}
