int sgemm(THFloatTensor *c, THFloatTensor *a, THFloatTensor *b);
int cadd(THFloatTensor *r, THFloatTensor *a, THFloatTensor *b);
