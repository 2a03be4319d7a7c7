/*
 * A net loaded from a file for the planner tests (test_planners, test_dqn):
 * the net, its route, and a request on its device (or the default link),
 * dynamic workspace and the default policy options; the caller sets the
 * budget.  Included after unit.h and plan/planners.h.
 */
#ifndef MP_TEST_FIXTURE_H
#define MP_TEST_FIXTURE_H

struct fixture {
	struct mp_net *net;
	struct mp_route route;
	struct mp_plan_req req;
};

/* 0, or -1 after printing why (nothing left to release). */
static int load(struct fixture *f, const char *path)
{
	struct mp_error err;

	memset(f, 0, sizeof(*f));
	if (!(f->net = net_load_file(path, &err)) || route_build(f->net, &f->route, &err) < 0) {
		fprintf(stderr, "%s: %s\n", path, err.msg);
		net_free(f->net);
		return -1;
	}
	if (f->net->has_device)
		f->req.device = f->net->device;
	else
		device_default(&f->req.device);
	f->req.ws_mode = MP_WS_DYNAMIC;
	policy_opts_default(&f->req.popts);
	return 0;
}

static void unload(struct fixture *f)
{
	route_release(&f->route);
	net_free(f->net);
}

#endif
