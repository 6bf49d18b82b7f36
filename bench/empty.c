/* empty.c: a C program that does nothing: the start-up cost gpuctl --version is compared to. */
int main(void)
{
	return 0;
}
