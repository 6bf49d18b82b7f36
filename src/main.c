/* main.c: gpuctl's entry point; everything happens in the subcommands (cmd.c). */
#include "gpuctl.h"

int main(int argc, char **argv)
{
	return cmd_main(argc, argv);
}
