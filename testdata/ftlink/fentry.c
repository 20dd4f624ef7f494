/* A local __fentry__, as ftkit's runtime defines it: a plain return. */
void __fentry__(void);
void __fentry__(void)
{
}
