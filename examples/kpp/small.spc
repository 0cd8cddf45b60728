{ small.spc - species of a small Chapman + NOx + HOx mechanism, written for esi's KPP
  importer (esi import-kpp). Atom compositions are KPP's; esi ignores them. }

#include atoms

#DEFVAR
O    = O ;             { ground-state atomic oxygen, O(3P) }
O3   = 3O ;
NO   = N + O ;
NO2  = N + 2O ;
NO3  = N + 3O ;
OH   = O + H ;
HO2  = H + 2O ;
HNO3 = H + N + 3O ;

#DEFFIX
M    = IGNORE ;        { the air: third body, and the C_M the TROE rate reads }
O2   = 2O ;
