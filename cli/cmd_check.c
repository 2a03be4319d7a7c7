/*
 * memplan check NET.json [--format table|json]: validate a network file and
 * summarise it (layers, ops, tensors, bytes by tensor kind, parameters).
 */
#include <string.h>

#include "cli.h"
#include "../analysis/route.h"

int cmd_check(int argc, char **argv)
{
	int fmt = FMT_TABLE, rc, at;
	const struct cli_opt opts[] = {
		OPT_FORMAT("format", "table|json", 0, &fmt, 0),
		OPT_END(),
	};
	const struct cli_cmd cmd = { "check", "NET.json", opts, NULL, NULL, 0 };
	struct mp_error err = { "" };
	struct mp_route route;
	struct mp_net *net;
	uint32_t n_by_phase[3] = { 0 };
	double ms_by_phase[3] = { 0 };
	char b1[32];

	if ((rc = cli_parse(&cmd, argc, argv, &at)) != CLI_GO)
		return rc;
	rc = EXIT_OK;
	if (argc - at != 1)
		return cli_usage_error(&cmd);
	if (!(net = cli_load_net(argv[at])))
		return EXIT_BAD_INPUT;
	if (route_build(net, &route, &err) < 0) {
		net_free(net);
		return cli_error(EXIT_BAD_INPUT, "%s: %s", argv[at], err.msg);
	}
	for (uint32_t o = 0; o < net->n_ops; o++) {
		n_by_phase[net->ops[o].phase]++;
		ms_by_phase[net->ops[o].phase] += net->ops[o].ms;
	}
	if (fmt == FMT_JSON) {
		json_t *root = json_object(), *kinds = json_object();

		json_object_set_new(root, "net", json_string(net->name));
		json_object_set_new(root, "valid", json_true());
		json_object_set_new(root, "dtype", json_string(mp_dtype_name(net->dtype)));
		json_object_set_new(root, "optimizer", json_string(mp_optimizer_name(net->optimizer)));
		json_object_set_new(root, "precision", net->precision.policy != MP_PREC_NONE ?
				    json_string(mp_precision_name(net->precision.policy)) : json_null());
		json_object_set_new(root, "framework", json_string(mp_framework_name(net->framework)));
		json_object_set_new(root, "grads", json_string(net->grads_keep ? "keep" : "set_to_none"));
		json_object_set_new(root, "layers", json_integer(net->n_layers));
		json_object_set_new(root, "ops", json_integer(net->n_ops));
		json_object_set_new(root, "forward_ops", json_integer(n_by_phase[0]));
		json_object_set_new(root, "backward_ops", json_integer(n_by_phase[1]));
		json_object_set_new(root, "optimizer_ops", json_integer(n_by_phase[2]));
		json_object_set_new(root, "tensors", json_integer(net->n_tensors));
		json_object_set_new(root, "parameters", json_integer((json_int_t)net_param_count(net)));
		json_object_set_new(root, "parameter_bytes", json_integer((json_int_t)net_bytes_of_kind(net, MP_TK_PARAM)));
		for (int k = 0; k < MP_TK__COUNT; k++)
			json_object_set_new(kinds, mp_tensor_kind_name((enum mp_tensor_kind)k),
					    json_integer((json_int_t)net_bytes_of_kind(net, (enum mp_tensor_kind)k)));
		json_object_set_new(root, "bytes_by_kind", kinds);
		json_object_set_new(root, "forward_ms", json_real(ms_by_phase[0]));
		json_object_set_new(root, "backward_ms", json_real(ms_by_phase[1]));
		json_object_set_new(root, "optimizer_ms", json_real(ms_by_phase[2]));
		json_object_set_new(root, "untimed", json_integer(net->n_untimed));
		json_object_set_new(root, "time_source", net->time_source ? json_string(net->time_source) : json_null());
		json_object_set_new(root, "device", net->has_device ? json_string(net->device.name) : json_null());
		out_json(stdout, root);
	} else {
		printf("%s: valid memplan-net/1 '%s' (%s, optimizer %s%s%s%s%s)\n", argv[at], net->name,
		       mp_dtype_name(net->dtype), mp_optimizer_name(net->optimizer),
		       net->precision.policy != MP_PREC_NONE ? ", precision " : "",
		       net->precision.policy != MP_PREC_NONE ? mp_precision_name(net->precision.policy) : "",
		       net->framework == MP_FW_PYTORCH ? ", framework pytorch" : "",
		       net->grads_keep ? ", grads keep" : "");
		printf("  layers       %u\n", net->n_layers);
		printf("  ops          %u (%u forward, %u backward, %u optimizer)\n", net->n_ops,
		       n_by_phase[0], n_by_phase[1], n_by_phase[2]);
		printf("  tensors      %u\n", net->n_tensors);
		printf("  parameters   %llu (%s)\n", (unsigned long long)net_param_count(net),
		       mp_fmt_bytes(net_bytes_of_kind(net, MP_TK_PARAM), b1, sizeof(b1)));
		printf("  bytes by tensor kind\n");
		for (int k = 0; k < MP_TK__COUNT; k++) {
			uint64_t b = net_bytes_of_kind(net, (enum mp_tensor_kind)k);

			printf("    %-19s %12s  %llu B\n", mp_tensor_kind_name((enum mp_tensor_kind)k),
			       mp_fmt_bytes(b, b1, sizeof(b1)), (unsigned long long)b);
		}
		printf("  time         %.3f ms forward, %.3f ms backward, %.3f ms optimizer",
		       ms_by_phase[0], ms_by_phase[1], ms_by_phase[2]);
		printf(" (%s)\n", net->time_source ? net->time_source : "source not given");
		if (net->n_untimed)
			printf("  note         %u layers or ops give no time; 0 ms assumed\n", net->n_untimed);
		printf("  device       %s%s\n", net->has_device ? net->device.name : "none given",
		       net->has_device ? cli_device_note(&net->device) : "");
	}
	route_release(&route);
	net_free(net);
	return rc;
}
