/* gpuctl.h: the commands of the table in main.c (each cmd-*.c file exports one entry) and the map
 * of the modules. MODULE MAP_PLACEHOLDER */
#ifndef GPUCTL_H
#define GPUCTL_H

#include "cmd.h"

extern const struct cmd_entry cmd_status_entry;
extern const struct cmd_entry cmd_map_entry;
extern const struct cmd_entry cmd_which_entry;
extern const struct cmd_entry cmd_run_entry;
extern const struct cmd_entry cmd_env_entry;
extern const struct cmd_entry cmd_leases_entry;
extern const struct cmd_entry cmd_release_entry;
extern const struct cmd_entry cmd_doctor_entry;
extern const struct cmd_entry cmd_kill_entry;
extern const struct cmd_entry cmd_exporter_entry;
extern const struct cmd_entry cmd_cuda_probe_entry;

#endif
