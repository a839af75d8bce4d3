/* Placeholder entry point; replaced by the strix command (train, sample). */
#include <stdio.h>
int main(void) { fprintf(stderr, "strix: not built yet\n"); return 1; }
