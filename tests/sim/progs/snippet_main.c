/* Snippet program: prints what the linked snippet library computed in its
 * constructor (before main) and computes it again from main. */
#include <stdio.h>

extern double snip_ctor_result;
double snip_run(void);

int main(void)
{
    double again = snip_run();
    printf("ctor=%a main=%a\n", snip_ctor_result, again);
    return snip_ctor_result == again ? 0 : 1;
}
