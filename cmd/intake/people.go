package main

import (
	"strings"

	"github.com/intakehq/intake"
)

// staffGrant is what a grant says instead of an org to make its group
// staff: `intake-staff=staff`.
const staffGrant = "staff"

// parsePeopleMap reads --oidc-map lines, each `group=staff` or
// `group=org[:role]` (the org by name; the role viewer, operator or admin,
// viewer when left out: a person gets no more than the operator wrote).
func parsePeopleMap(lines []string) (intake.PeopleMap, error) {
	var m intake.PeopleMap
	for _, line := range lines {
		group, target, ok := strings.Cut(line, "=")
		group, target = strings.TrimSpace(group), strings.TrimSpace(target)
		if !ok || group == "" || target == "" {
			return nil, intake.Errorf(intake.EINVALID, "--oidc-map %q: want group=staff or group=org:role", line)
		}
		g := intake.PeopleGrant{Group: group}
		if target == staffGrant {
			g.Staff = true
			m = append(m, g)
			continue
		}
		g.Org, g.Role = target, intake.RoleViewer
		if i := strings.LastIndex(target, ":"); i >= 0 {
			role, err := intake.ParseRole(target[i+1:])
			if err != nil || strings.TrimSpace(target[i+1:]) == "" {
				return nil, intake.Errorf(intake.EINVALID, "--oidc-map %q: the role after the last ':' must be viewer, operator or admin", line)
			}
			g.Org, g.Role = strings.TrimSpace(target[:i]), role
		}
		if err := intake.CheckName("--oidc-map org", g.Org); err != nil {
			return nil, intake.Errorf(intake.EINVALID, "--oidc-map %q: name an org before the role", line)
		}
		m = append(m, g)
	}
	return m, nil
}
