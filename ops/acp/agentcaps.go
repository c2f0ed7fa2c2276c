package acp

// ProtocolCaps is the protocol layer of a resolve: what the agent says it takes. It is the
// promptCapabilities of the agent's initialize response when one is given (init), else those the
// adapter profile a records that adapter advertising (so that --agent NAME alone resolves as
// --initialize with that adapter's own response does), else the default, image alone. Capabilities
// the user names (user, when userSet) narrow it: they never add what the agent does not say.
func ProtocolCaps(user Caps, userSet bool, init *Agent, a *Adapter) Caps {
	var said Caps
	switch {
	case init != nil:
		said = init.Caps
	case a != nil:
		said = a.Caps
	default:
		if userSet {
			return user
		}
		return DefaultCaps
	}
	if userSet {
		return user.And(said)
	}
	return said
}

// DefaultCaps are what resolve assumes of an agent nothing is known of: images alone.
var DefaultCaps = Caps{Image: true}
